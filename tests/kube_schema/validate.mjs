// Validates Kubernetes objects offline against their JSON schemas: built-in kinds with the
// kubernetes-models package, custom resources against the CustomResourceDefinitions read before
// them (through @kubernetes-models/crd-generate's validators), plus a check that the API server
// would prune none of a custom resource's fields.
//
//   node validate.mjs FILE...      each FILE a YAML stream ("-" reads standard input)
//
// Prints one line per document ("ok Pod default/hello-ps-0") and, for every invalid one, what is
// wrong; exits 1 when any document is invalid or of a kind it has no schema for. Kinds with no
// published model (Volcano's and scheduler-plugins' PodGroup) get their metadata checked against
// ObjectMeta and their spec.minMember's type, and are reported as "partly checked".
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseAllDocuments } from "yaml";

// The CommonJS builds: the generator's ES module build imports a directory, which Node refuses.
const require = createRequire(import.meta.url);
const { generate } = require("@kubernetes-models/crd-generate");
const { ObjectMeta } = require("@kubernetes-models/apimachinery/apis/meta/v1/ObjectMeta");

const here = dirname(fileURLToPath(import.meta.url));
// Inside node_modules, so that the generated validators' imports resolve to this folder's packages.
const generatedRoot = join(here, "node_modules", ".cohort-generated");
const maxInputBytes = 16 * 1024 * 1024;

const partlyChecked = new Set(["scheduling.volcano.sh/v1beta1/PodGroup", "scheduling.x-k8s.io/v1alpha1/PodGroup"]);
// "group/version/Kind" -> { validate, schema } of each CRD read so far.
const customResources = new Map();

function readInput(file) {
  const text = file === "-" ? readFileSync(0, "utf8") : readFileSync(file, "utf8");
  if (text.length > maxInputBytes) throw new Error(`${file}: larger than ${maxInputBytes} bytes`);
  return text;
}

// The kubernetes-models module of a built-in apiVersion: "v1" -> kubernetes-models/v1,
// "apps/v1" -> kubernetes-models/apps/v1.
async function builtInModel(apiVersion, kind) {
  try {
    const module = await import(`kubernetes-models/${apiVersion}`);
    return module[kind];
  } catch {
    return undefined;
  }
}

function formatErrors(errors) {
  return (errors || []).map((e) => `${e.instancePath || "/"} ${e.message || e.keyword}`).join("; ");
}

// Fields a structural schema does not declare: the API server prunes them from custom resources.
function prunedFields(value, schema, path, out) {
  if (schema === undefined || value === null || typeof value !== "object") return;
  if (schema["x-kubernetes-preserve-unknown-fields"]) return;
  if (Array.isArray(value)) {
    value.forEach((item, i) => prunedFields(item, schema.items, `${path}[${i}]`, out));
    return;
  }
  for (const [key, child] of Object.entries(value)) {
    const childPath = path ? `${path}.${key}` : key;
    if (schema.properties && key in schema.properties) {
      prunedFields(child, schema.properties[key], childPath, out);
    } else if (schema.additionalProperties && typeof schema.additionalProperties === "object") {
      prunedFields(child, schema.additionalProperties, childPath, out);
    } else if (schema.additionalProperties !== true) {
      out.push(childPath);
    }
  }
}

async function registerCrd(crd) {
  const text = JSON.stringify(crd);
  const directory = join(generatedRoot, createHash("sha256").update(text).digest("hex").slice(0, 16));
  mkdirSync(directory, { recursive: true });
  writeFileSync(join(directory, "package.json"), '{"type":"module"}\n');
  const log = console.log;
  console.log = () => {};  // the generator announces every file it writes
  try {
    await generate({ input: text, outputPath: directory });
  } finally {
    console.log = log;
  }
  const { group, names } = crd.spec;
  for (const version of crd.spec.versions) {
    const schemaName = [...group.split(/[.-]/), version.name, names.kind]
      .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
      .join("");
    const module = await import(pathToFileURL(join(directory, "_schemas", `${schemaName}.js`)).href);
    customResources.set(`${group}/${version.name}/${names.kind}`, {
      validate: module.validate,
      schema: version.schema.openAPIV3Schema,
    });
  }
}

async function check(object) {
  const { apiVersion, kind } = object;
  const where = object.metadata ? `${object.metadata.namespace ? object.metadata.namespace + "/" : ""}${object.metadata.name}` : "(no metadata)";
  const key = `${apiVersion}/${kind}`;
  const custom = customResources.get(key);
  if (custom) {
    const problems = [];
    if (!custom.validate(object)) problems.push(formatErrors(custom.validate.errors));
    const pruned = [];
    const { metadata, ...rest } = object;
    prunedFields(rest, custom.schema, "", pruned);
    if (pruned.length) problems.push(`fields the API server would prune: ${pruned.join(", ")}`);
    return { where, problems };
  }
  if (partlyChecked.has(key)) {
    const problems = [];
    try {
      new ObjectMeta(object.metadata).validate();
    } catch (error) {
      problems.push(`metadata: ${error.message}`);
    }
    if (!object.spec || !Number.isInteger(object.spec.minMember)) problems.push("spec.minMember must be an integer");
    return { where, problems, partly: true };
  }
  const Model = typeof apiVersion === "string" && typeof kind === "string" ? await builtInModel(apiVersion, kind) : undefined;
  if (!Model) return { where, problems: [`no schema for apiVersion ${apiVersion} kind ${kind}`] };
  try {
    new Model(object).validate();
  } catch (error) {
    return { where, problems: [error.message] };
  }
  if (kind === "CustomResourceDefinition") await registerCrd(object);
  return { where, problems: [] };
}

async function main(files) {
  if (files.length === 0) {
    console.error("usage: node validate.mjs FILE... (\"-\" reads standard input)");
    return 2;
  }
  let invalid = 0;
  for (const file of files) {
    const documents = parseAllDocuments(readInput(file));
    for (const [index, document] of documents.entries()) {
      const label = `${file}#${index + 1}`;
      if (document.errors.length) {
        console.log(`INVALID ${label}: YAML: ${document.errors.map((e) => e.message).join("; ")}`);
        invalid++;
        continue;
      }
      const object = document.toJS();
      if (object === null || object === undefined) continue;
      const { where, problems, partly } = await check(object);
      if (problems.length) {
        console.log(`INVALID ${label} ${object.kind} ${where}: ${problems.join("; ")}`);
        invalid++;
      } else {
        console.log(`ok ${object.kind} ${where}${partly ? " (partly checked: no published schema)" : ""}`);
      }
    }
  }
  return invalid ? 1 : 0;
}

process.exitCode = await main(process.argv.slice(2));
