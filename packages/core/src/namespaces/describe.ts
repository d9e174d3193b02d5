/** backends.describe(name): what a flag is, what it holds, and which packages read it. */
import { ArgumentError } from "../errors.ts";
import { allowedText, envNames, typeText } from "../flags/spec.ts";
import {
  flagChoices,
  flagReaders,
  flagSpec,
  getFlag,
  isInert,
  isPackageLoaded,
} from "../flags/state.ts";
import { show } from "../util/format.ts";
import { readFlag } from "./namespace.ts";
import { fromTorchName, TORCH_NAMES } from "./torch-names.ts";

/** What describe() tells of a flag. */
export interface FlagDescription {
  /** Full key: "quantized.engine". */
  name: string;
  /** "boolean", "integer [0, 2]", '"none" | (provided)'... */
  type: string;
  /** What it accepts now, in words. */
  accepts: string;
  default: unknown;
  value: unknown;
  /** The PyTorch name, when the flag mirrors one. */
  torch?: string;
  /** Environment variables read at start. */
  env: readonly string[];
  doc?: string;
  /** The packages whose code reads it, and whether each is loaded. */
  readBy: { package: string; loaded: boolean }[];
  /** No loaded package reads it: setting it changes nothing. */
  inert: boolean;
}

/** Resolves "cudnn.benchmark", "backends.cudnn.benchmark" or "torch.backends.cudnn.benchmark". */
export function describeFlag(name: string): FlagDescription {
  if (typeof name !== "string")
    throw new ArgumentError(`backends.describe(name): name must be a string, got ${show(name)}`);
  let key = fromTorchName(name) ?? name;
  if (key.startsWith("backends.")) key = key.slice("backends.".length);
  const spec = flagSpec(key);
  if (!spec) {
    getFlag(key); // throws the did-you-mean error for a key that is not a flag
    throw new ArgumentError(`backends.describe: ${name} is not a flag`);
  }
  const readers = flagReaders(key);
  return {
    name: key,
    type: typeText(spec),
    accepts: allowedText(
      spec,
      flagChoices(key).slice(spec.kind === "enum" ? spec.values.length : 0),
    ),
    default: spec.default,
    // As backends.<ns> reads it: optEinsum.enabled is false where the plugin cannot run.
    value: readFlag(key),
    torch: torchNameOf(key, spec.torch),
    env: envNames(spec),
    doc: spec.doc,
    readBy: readers.map((p) => ({ package: p, loaded: isPackageLoaded(p) })),
    inert: isInert(key),
  };
}

/**
 * The PyTorch name of a flag: from the mapping table, else the spec's own when it is a full
 * torch name (a flag behind a torch function: torch.set_float32_matmul_precision,
 * torch.backends.cuda.enable_flash_sdp), not a bare argument name like "warn_only".
 */
function torchNameOf(key: string, specName: string | undefined): string | undefined {
  return TORCH_BY_KEY.get(key) ?? (specName?.startsWith("torch.") ? specName : undefined);
}

/** Flag key -> torch name, from TORCH_NAMES. */
const TORCH_BY_KEY = new Map(
  Object.entries(TORCH_NAMES)
    .filter(([, v]) => v.startsWith("backends."))
    .map(([t, v]) => [v.slice("backends.".length), t]),
);
