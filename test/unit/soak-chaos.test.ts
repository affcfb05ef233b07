// What the soak says its chaos will do is what it does: the actions that fire while the requests go
// out (at evenly spaced milestones, each before the last request) and the one after the last.
import { describe, expect, it } from 'vitest';
import { chaosMilestones, chaosPlanLine, plannedActions } from '../../harness/soak-chaos.ts';

describe("the soak's chaos plan", () => {
  it.each([70, 40, 150, 1000])('names the actions a run of %i requests fires, the finale included', (total) => {
    const milestones = chaosMilestones(total);
    // Every milestone falls on a request that is posted before the last one, in order, none twice.
    expect(milestones.every((at, index) => at >= 1 && at < total && (index === 0 || at > milestones[index - 1]!))).toBe(
      true,
    );
    // The last of the planned milestones is the last request: the finale takes its place.
    expect(milestones).toHaveLength(plannedActions(total) - 1);
    expect(chaosPlanLine(total)).toBe(
      `${milestones.length + 1} process chaos actions (${milestones.length} as the requests go out, 1 after the last)`,
    );
  });

  it('says 5 for the CI size (70 requests): one of each kind as the requests go out, then the finale', () => {
    expect(chaosPlanLine(70)).toMatch(/^5 process chaos actions \(4 as the requests go out, 1 after the last\)/);
  });
});
