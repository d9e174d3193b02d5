/**
 * Flag values live in immutable FlagState snapshots. A change makes a new snapshot, so
 * the dispatcher can cache its decisions per snapshot and a cache hit costs one lookup.
 */

let nextId = 1;

/**
 * Each flag's value before any set: the environment's, else the default. Every snapshot's
 * values inherit from it, so a flag defined while a task runs in its own frame (a backend
 * imported inside withFlags) has its value in every frame, not only in that task's.
 */
const initialValues: Record<string, unknown> = Object.create(null);

/** Records a newly defined flag's initial value (seen by every snapshot, old and new). */
export function setInitialValue(key: string, value: unknown): void {
  initialValues[key] = value;
}

/** Values with `changes` over `base`'s own, inheriting the initial values. */
export function valuesWith(
  base: Readonly<Record<string, unknown>>,
  changes: Readonly<Record<string, unknown>>,
): Record<string, unknown> {
  return Object.assign(Object.create(initialValues), base, changes);
}

export class FlagState {
  readonly id = nextId++;
  constructor(
    /** Flag values by full key, e.g. "cudnn.benchmark". */
    readonly values: Readonly<Record<string, unknown>>,
    /** User kernel priority per op: kernel names tried first, in order. */
    readonly priorities: Readonly<Record<string, readonly string[]>>,
  ) {}

  /**
   * Snapshots derived from this one, by change. A scope opened again and again with the
   * same changes (a hot loop) gets the same snapshot back, so the dispatcher's cache hits.
   */
  private derived: Map<string, FlagState> | undefined;

  private derive(key: string, make: () => FlagState): FlagState {
    this.derived ??= new Map();
    let s = this.derived.get(key);
    if (!s) {
      if (this.derived.size >= 64) this.derived.clear();
      s = make();
      this.derived.set(key, s);
    }
    return s;
  }

  with(changes: Readonly<Record<string, unknown>>): FlagState {
    let same = true;
    for (const k in changes) {
      if (this.values[k] !== changes[k]) {
        same = false;
        break;
      }
    }
    if (same) return this;
    let key: string;
    try {
      key = `w${JSON.stringify(changes)}`;
    } catch {
      return new FlagState(valuesWith(this.values, changes), this.priorities);
    }
    return this.derive(key, () => new FlagState(valuesWith(this.values, changes), this.priorities));
  }

  withPriority(op: string, names: readonly string[] | null): FlagState {
    return this.derive(`p${op}\u0000${names === null ? "\u0001" : names.join("\u0000")}`, () => {
      // No prototype: an op named "constructor" or "hasOwnProperty" has no priority list.
      const p: Record<string, readonly string[]> = Object.assign(
        Object.create(null),
        this.priorities,
      );
      if (names === null) delete p[op];
      else p[op] = [...names];
      return new FlagState(this.values, p);
    });
  }
}
