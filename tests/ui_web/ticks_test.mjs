// The dashboard's tick labels (src/ui/web/src/ticks.mjs), run by node's own test runner.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { tickLabels } from '../../src/ui/web/src/ticks.mjs';

test('ticks finer than one significant digit get the digits that tell them apart', () => {
  assert.deepEqual(tickLabels([0.001, 0.0015, 0.002, 0.0025]), ['0.001', '0.0015', '0.002', '0.0025']);
});

test('round ticks stay short', () => {
  assert.deepEqual(tickLabels([0, 0.5, 1, 1.5, 2]), ['0', '0.5', '1', '1.5', '2']);
  assert.deepEqual(tickLabels([1000, 2000, 3000]), ['1000', '2000', '3000']);
});

test('every label differs whatever the spacing', () => {
  const values = [0.30001, 0.30002, 0.30003];
  const labels = tickLabels(values);
  assert.equal(new Set(labels).size, values.length);
  assert.deepEqual(labels.map(Number), values);
});
