/** The daemon's event bus: numbering, the bounded replay ring, and listeners that fail. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { EventBus } from '../../../src/daemon/services/events.js';
import { ManualClock } from '../../helpers/clock.js';

const fixedClock = (): ManualClock => new ManualClock('2031-05-06T07:08:09.000Z');

describe('event bus', () => {
  it('numbers events from 1 and keeps only the last `capacity` for replay; an older since reports a gap', () => {
    const bus = new EventBus(fixedClock(), 5);
    for (let i = 0; i < 8; i++) bus.emit({ type: 'daemon.locked', reason: `r${i}` });
    assert.equal(bus.lastSeq, 8);
    const all = bus.since(0);
    assert.deepEqual(all.events.map((e) => e.seq), [4, 5, 6, 7, 8]);
    assert.equal(all.gap, true);
    assert.deepEqual(bus.since(3), { events: all.events, gap: false });
    assert.deepEqual(bus.since(6).events.map((e) => e.seq), [7, 8]);
    assert.deepEqual(bus.since(8), { events: [], gap: false });
  });

  it('a listener that throws is removed; the others and the emitter go on', () => {
    const bus = new EventBus(fixedClock());
    const got: number[] = [];
    bus.subscribe(() => {
      throw new Error('broken');
    });
    bus.subscribe((e) => got.push(e.seq));
    bus.emit({ type: 'daemon.unlocked' });
    bus.emit({ type: 'daemon.unlocked' });
    assert.deepEqual(got, [1, 2]);
    assert.equal(bus.subscribers, 1);
  });

  it('stamps events with the injected clock', () => {
    const clock = fixedClock();
    const bus = new EventBus(clock);
    assert.equal(bus.emit({ type: 'daemon.unlocked' }).at, clock.now().toISOString());
  });
});
