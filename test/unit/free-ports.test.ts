// stack/ports.ts findFreePorts: the ports a caller needs at once are all different and free once
// found (each probe stays bound until the last is found, then all are released).
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { findFreePorts } from '../../stack/ports.ts';

describe('findFreePorts', () => {
  it('finds 50 ports, all different, each free to bind once found', async () => {
    const ports = await findFreePorts(50);
    expect(ports).toHaveLength(50);
    expect(new Set(ports).size).toBe(50);
    for (const port of ports.slice(0, 5)) {
      const server = net.createServer();
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, '127.0.0.1', () => resolve());
      });
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
