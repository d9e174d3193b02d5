/**
 * The house rules for imports, checked in `npm run lint` (and so in CI):
 * no cycles, the core imports no backend, no backend imports another, no package
 * reaches into another package's files (only its published entry points), and inside the
 * core no layer imports one above it.
 */
const { readdirSync, readFileSync, existsSync } = require("node:fs");

// Each package's entry files: what its exports map "./dist/<x>.js" to, src/<x>.ts
// (the same rule as scripts/workspaces.mjs).
const entries = readdirSync("packages")
  .filter((d) => existsSync(`packages/${d}/package.json`))
  .flatMap((d) =>
    Object.values(JSON.parse(readFileSync(`packages/${d}/package.json`, "utf8")).exports ?? {})
      .map((t) => /^\.\/dist\/(.+)\.js$/.exec(typeof t === "string" ? t : (t.default ?? "")))
      .filter(Boolean)
      .map((m) => `^packages/${d}/src/${m[1].replace(/[.]/g, "\\.")}\\.ts$`),
  );

// @backplane/core's own layers, bottom first: a module imports from its layer or below.
// (errors.ts and version.ts sit with util; the entries — api.ts, index.ts and the rest at
// src/ — are the top.)
const CORE_LAYERS = [
  ["util/", "errors\\.ts$", "version\\.ts$"],
  ["runtime/"],
  ["tensor/"],
  ["flags/"],
  ["registry/"],
  ["wasm/"],
  ["dispatch/"],
  ["ops/"],
  ["quantized/", "reference/"],
  ["namespaces/"],
  ["torch/"],
];
const core = (parts) => `^packages/core/src/(${parts.join("|")})`;
const coreLayerRules = CORE_LAYERS.slice(0, -1).map((layer, i) => ({
  name: `core-layer-${layer[0].replace(/\W/g, "")}`,
  comment: `core's ${layer.join(" ")} imports only from its own layer or the ones below`,
  severity: "error",
  from: { path: core(layer) },
  to: {
    path: [
      core(CORE_LAYERS.slice(i + 1).flat()),
      "^packages/core/src/(api|author-api|cpu-api|op-handles|index|backend|cpu|one-core)\\.ts$",
    ],
  },
}));

module.exports = {
  forbidden: [
    ...coreLayerRules,
    { name: "no-cycles", severity: "error", from: {}, to: { circular: true } },
    {
      name: "core-contract-apart-from-cpu-toolkit",
      comment:
        "@backplane/core/backend is the contract; the WASM memory, loader, parallel-for and FFI are @backplane/core/cpu's (src/cpu-api.ts)",
      severity: "error",
      from: { path: "^packages/core/src/author-api\\.ts$" },
      to: { path: "^packages/core/src/(wasm|runtime)/" },
    },
    {
      name: "core-imports-no-backend",
      comment: "@backplane/core is the bottom layer: it knows no plugin.",
      severity: "error",
      from: { path: "^packages/core/" },
      to: { path: "^packages/(?!core/)|@backplane/(?!core)" },
    },
    {
      name: "no-backend-imports-another",
      comment: "Backends cooperate through contracts the core defines, never directly.",
      severity: "error",
      from: { path: "^packages/(backend-[^/]+)/src/" },
      to: { path: "^packages/backend-|@backplane/backend-", pathNot: "^packages/$1/" },
    },
    {
      name: "only-entry-points-across-packages",
      comment: "Another package is reached through its package name (its exports), not its files.",
      severity: "error",
      from: { path: "^(packages|apps)/([^/]+)/" },
      to: { path: "^(packages|apps)/", pathNot: ["^$1/$2/", ...entries] },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "(^|/)(dist|node_modules)/" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    combinedDependencies: true,
  },
};
