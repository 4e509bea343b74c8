// @subject time: idle locking on monotonic time, wall-clock steps (run again a year ahead by .ci/run)
/** Idleness is measured on the monotonic clock: a wall-clock step never locks or keeps open. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { IdleTracker } from '../../../src/daemon/services/idle.js';
import { ManualClock } from '../../helpers/clock.js';

const MIN = 60_000;

describe('IdleTracker', () => {
  it('a wall-clock step forward of 62 minutes does not make a 60-minute limit expire', () => {
    const clock = new ManualClock('2026-12-01T09:00:00Z');
    const idle = new IdleTracker(clock, 60 * MIN);
    clock.stepWall(62 * MIN);
    clock.advance(16_000);
    assert.equal(idle.expired(), false);
  });

  it('a wall-clock step back does not keep an idle daemon open', () => {
    const clock = new ManualClock('2026-12-01T09:00:00Z');
    const idle = new IdleTracker(clock, 60 * MIN);
    clock.stepWall(-24 * 60 * MIN);
    clock.advance(60 * MIN + 1);
    assert.equal(idle.expired(), true);
  });

  it('expires after the limit of monotonic time without a touch; a touch restarts it', () => {
    const clock = new ManualClock(0);
    const idle = new IdleTracker(clock, 10 * MIN);
    clock.advance(9 * MIN);
    idle.touch();
    clock.advance(9 * MIN);
    assert.equal(idle.expired(), false);
    clock.advance(MIN + 1);
    assert.equal(idle.expired(), true);
  });

  it('a limit of 0 never expires', () => {
    const clock = new ManualClock(0);
    const idle = new IdleTracker(clock, 0);
    clock.advance(1e12);
    assert.equal(idle.expired(), false);
  });
});
