// `walletflow codec-server`: the codec endpoint the Temporal UI (and `temporal workflow show
// --codec-endpoint`) call to show decrypted payloads. It holds PAYLOAD_ENCRYPTION_KEYS, so an
// operator who holds the keys runs it on their own machine, on loopback by default.
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { createCodecApp } from '../stack/codec-endpoint.ts';
import { loadConfig } from '../lib/config.ts';
import { AesGcmPayloadCodec } from '../lib/payload-codec.ts';

export interface CodecServerOptions {
  port: string;
  host: string;
  origin: string[];
}

export async function runCodecServer(options: CodecServerOptions): Promise<number> {
  const config = loadConfig();
  const keys = config.payloadKeys;
  if (!keys || keys.length === 0) {
    console.error(
      'walletflow codec-server: PAYLOAD_ENCRYPTION_KEYS (or PAYLOAD_ENCRYPTION_KEYS_FILE) is not set: there is nothing to decrypt with',
    );
    return 78;
  }
  // A token made up here is printed, and a production codec server's output goes to a log (the
  // compose service's): there it must be the operator's own.
  if (!config.codecAuthToken && config.nodeEnv === 'production') {
    console.error(
      'walletflow codec-server: CODEC_AUTH_TOKEN: is required in production (16 to 512 printable characters; without it a token would be made up and printed to the log)',
    );
    return 78;
  }
  const port = Number(options.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    console.error('walletflow codec-server: --port must be a port number');
    return 64;
  }
  // CODEC_AUTH_TOKEN, or one made up for this run and printed (a given token is never printed).
  const bearerToken = config.codecAuthToken ?? randomBytes(24).toString('base64url');
  const app = createCodecApp({ codec: new AesGcmPayloadCodec(keys), allowedOrigins: options.origin, bearerToken });
  const server = app.listen(port, options.host);
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve);
    server.once('error', reject);
  });
  const address = server.address() as AddressInfo;
  const endpoint = `http://${options.host.includes(':') ? `[${options.host}]` : options.host}:${address.port}`;
  console.log(
    `codec endpoint: ${endpoint} (keys: ${keys.map((key) => key.id).join(', ')}; browser origins: ${options.origin.join(', ')})`,
  );
  console.log(
    config.codecAuthToken
      ? 'bearer token: CODEC_AUTH_TOKEN (not printed)'
      : `bearer token: ${bearerToken} (made up for this run; set CODEC_AUTH_TOKEN to choose one)`,
  );
  console.log(
    `Temporal UI: settings (the data encoder icon) → codec server endpoint ${endpoint}, with the UI's access token passed`,
  );
  console.log(`CLI: temporal workflow show --workflow-id … --codec-endpoint ${endpoint} --codec-auth 'Bearer <token>'`);
  await new Promise<void>((resolve) => {
    const stop = () => server.close(() => resolve());
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  return 0;
}
