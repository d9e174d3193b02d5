/**
 * One core per process. npm installs two copies of @backplane/core when two packages pin
 * different versions; left alone each copy would have its own registry, flags and Tensor
 * class, so a backend registered through one would be invisible to the other and a tensor
 * made by one "not a Tensor" to the other. So the first copy to load publishes its API on
 * a globalThis brand (Symbol.for: shared across copies and bundles), and a later copy
 * hands out that API instead of its own when the versions are compatible (the same
 * breaking version, the same contract number), or refuses to load with a
 * CoreConflictError naming both copies.
 */
import { CoreConflictError } from "./errors.ts";
import { version } from "./version.ts";

/** Bumped when what the entries share changes incompatibly within one breaking version. */
export const CORE_CONTRACT = 2;

const BRAND = Symbol.for("@backplane/core");

interface Claim<U, A, C> {
  readonly version: string;
  readonly contract: number;
  /** Where the copy that loaded first lives. */
  readonly path: string;
  readonly user: U;
  readonly author: A;
  readonly cpu: C;
}

/** The breaking part of a semver version: the major, or 0.minor before 1.0. */
export function breakingPart(v: string): string {
  const [major = "", minor = ""] = v.split(".");
  return major === "0" ? `0.${minor}` : major;
}

/** This copy's folder (a path for a file: URL), up to dist/ or src/; a bundle keeps its URL. */
function copyPath(): string {
  const url = import.meta.url;
  const at = Math.max(url.lastIndexOf("/dist/"), url.lastIndexOf("/src/"));
  const folder = at > 0 ? url.slice(0, at) : url;
  return folder.startsWith("file://") ? decodeURIComponent(new URL(folder).pathname) : folder;
}

/**
 * The API every entry of every copy hands out: this copy's (user, author and CPU parts)
 * when it is the first, else the first copy's.
 */
export function oneCore<U, A, C>(user: U, author: A, cpu: C): { user: U; author: A; cpu: C } {
  const g = globalThis as { [BRAND]?: Claim<U, A, C> };
  const first = g[BRAND];
  const path = copyPath();
  if (first === undefined) {
    const claim: Claim<U, A, C> = { version, contract: CORE_CONTRACT, path, user, author, cpu };
    Object.defineProperty(globalThis, BRAND, { value: claim, enumerable: false });
    return claim;
  }
  if (first.path === path) return first;
  if (breakingPart(first.version) !== breakingPart(version) || first.contract !== CORE_CONTRACT)
    throw new CoreConflictError(
      { version: `${first.version} (contract ${first.contract})`, path: first.path },
      { version: `${version} (contract ${CORE_CONTRACT})`, path },
    );
  return first;
}
