// Parses the /metrics text Cohort wrote (the file named on the command line, written by
// metrics_sample) with parse-prometheus-text-format, a parser Cohort did not write, and checks
// what it read back: every family with its type, labels (escaped values read back as written)
// and values. Also makes sure the parser refuses malformed text, so that this check can fail.
// Usage: node check.mjs METRICS_FILE
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const parse = require('parse-prometheus-text-format');

function fail(message) {
  console.error(`prometheus_text: ${message}`);
  process.exit(1);
}

const text = readFileSync(process.argv[2], 'utf8');
let families;
try {
  families = parse(text);
} catch (error) {
  fail(`the parser refused Cohort's text: ${error.message}`);
}
const byName = new Map(families.map((family) => [family.name, family]));

const expectedTypes = {
  cohort_jobs: 'GAUGE',
  cohort_job_state: 'GAUGE',
  cohort_job_start_time_seconds: 'GAUGE',
  cohort_job_completion_time_seconds: 'GAUGE',
  cohort_job_duration_seconds: 'GAUGE',
  cohort_job_replicas: 'GAUGE',
  cohort_replica_restarts_total: 'COUNTER',
  cohort_training_global_step: 'GAUGE',
  cohort_training_loss: 'GAUGE',
  cohort_training_samples_per_second: 'GAUGE',
  cohort_training_step_seconds: 'GAUGE',
  cohort_training_allreduce_wait_seconds: 'GAUGE',
  cohort_training_last_update_seconds: 'GAUGE',
};
for (const [name, type] of Object.entries(expectedTypes)) {
  const family = byName.get(name);
  if (!family) fail(`no family ${name}`);
  if (family.type !== type) fail(`${name} is ${family.type}, expected ${type}`);
  if (!family.help) fail(`${name} has no HELP`);
  if (family.metrics.length === 0) fail(`${name} has no samples`);
}
for (const family of families) {
  for (const metric of family.metrics) {
    // The parser reads a value it cannot make sense of as ""; every value must be a number.
    if (!/^([-+]?[0-9.]+(e[-+]?[0-9]+)?|NaN|[-+]Inf)$/i.test(metric.value)) {
      fail(`${family.name} ${JSON.stringify(metric.labels)} has value "${metric.value}"`);
    }
  }
}
if (families.length !== Object.keys(expectedTypes).length) {
  fail(`unexpected families: ${families.map((f) => f.name).join(', ')}`);
}

function sample(name, labels) {
  const found = byName.get(name).metrics.filter((metric) =>
    Object.entries(labels).every(([key, value]) => metric.labels[key] === value));
  if (found.length !== 1) {
    fail(`${found.length} samples of ${name} with ${JSON.stringify(labels)}`);
  }
  return Number(found[0].value);
}
function expectValue(name, labels, expected) {
  const value = sample(name, labels);
  if (value !== expected) fail(`${name} ${JSON.stringify(labels)} is ${value}, expected ${expected}`);
}

expectValue('cohort_jobs', { job_namespace: 'default', framework: 'tensorflow', state: 'Running' }, 1);
expectValue('cohort_jobs', { job_namespace: 'default', framework: 'tensorflow', state: 'Failed' }, 0);
expectValue('cohort_jobs', { job_namespace: 'research', framework: 'tensorflow', state: 'Succeeded' }, 1);
expectValue('cohort_job_state', { namespace: 'default', job_name: 'mnist', state: 'Running' }, 1);
expectValue('cohort_job_state', { namespace: 'default', job_name: 'mnist', state: 'Succeeded' }, 0);
expectValue('cohort_job_duration_seconds', { namespace: 'research', job_name: 'done' }, 90);
expectValue('cohort_job_replicas',
  { namespace: 'default', job_name: 'mnist', replica_type: 'worker', status: 'active' }, 2);
// A replica name with a quote, a backslash and a line feed comes back as it was written.
expectValue('cohort_replica_restarts_total',
  { namespace: 'default', pod: 'mnist-worker-"odd"\\name\nline', container: 'tensorflow' }, 3);
expectValue('cohort_replica_restarts_total',
  { namespace: 'default', pod: 'mnist-worker-1', replica_type: 'worker', replica_index: '1' }, 2);
const worker0 = { namespace: 'default', job_name: 'mnist', pod: 'mnist-worker-0' };
expectValue('cohort_training_global_step', worker0, 120);
expectValue('cohort_training_loss', worker0, 0.25);
expectValue('cohort_training_samples_per_second', worker0, 3000);
expectValue('cohort_training_step_seconds', worker0, 0.043);
expectValue('cohort_training_allreduce_wait_seconds', worker0, 0.004);
expectValue('cohort_training_last_update_seconds', worker0, 1700000000.5);

// The parser must refuse what is not the format, or this check could not fail.
for (const bad of ['cohort_jobs{state=x} 1\n', '# TYPE cohort_jobs\n']) {
  let refused = false;
  try {
    parse(bad);
  } catch (error) {
    refused = true;
  }
  if (!refused) fail(`the parser accepted malformed text: ${JSON.stringify(bad)}`);
}
console.log(`prometheus_text: ${families.length} families parsed and checked`);
