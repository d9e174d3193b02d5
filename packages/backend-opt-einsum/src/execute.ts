/**
 * Runs an einsum along a contraction path, each pairwise step as one batched matmul
 * (or, when nothing is summed, one broadcast multiply), through the core's dispatched
 * ops, so the fastest matmul kernel for the device runs.
 *
 * Operands are descriptors over a tensor's memory (shape, strides, one label per
 * dimension); a real tensor view is made only for what a matmul reads. First, a repeated
 * index (a diagonal or a trace) becomes one dimension whose stride is the sum of the
 * repeated ones, and every dimension of size 1 is dropped (summing over it or
 * broadcasting it changes nothing). A step then sorts the indices of its two operands into
 *   batch (both, kept) · m (only A, kept) · n (only B, kept) · k (both, summed),
 * sums indices held by one operand only and needed nowhere else (a matmul with a vector
 * of ones), views A as [batch, m, k] and B as [batch, k, n] — without a copy whenever the
 * strides allow it, in index orders chosen to follow the larger operand's layout — and
 * calls matmul. Intermediates are released as soon as they are consumed. The last result
 * is permuted to the output order and copied once.
 */
import { full, matmul, mul, Tensor } from "@backplane/core";
import { type EinsumParams, labelledDims } from "@backplane/core/backend";

interface Operand {
  /** The tensor whose memory this operand reads. */
  base: Tensor;
  /** Whether base was made here (released once the operand is consumed). */
  owned: boolean;
  shape: number[];
  strides: number[];
  /** One label per dimension (no repeats, no size-1 dimensions). */
  labels: string[];
}

/** A real tensor over an operand's memory with the given shape and strides. */
function tensorOver(op: Operand, shape: number[], strides: number[]): Tensor {
  op.base.storage.retain();
  return new Tensor(op.base.storage, op.base.dtype, shape, strides, op.base.offset);
}

function release(op: Operand): void {
  if (op.owned) op.base.dispose();
}

/** An input as an Operand: diagonals folded, size-1 dimensions dropped. */
function prepare(t: Tensor, labels: readonly string[]): Operand {
  return { base: t, owned: false, ...labelledDims(t, labels) };
}

/** A fresh result tensor as an operand. */
function result(t: Tensor, shape: number[], labels: string[]): Operand {
  let s = 1;
  const strides = new Array<number>(shape.length);
  for (let i = shape.length - 1; i >= 0; i--) {
    strides[i] = s;
    s *= shape[i];
  }
  return { base: t, owned: true, shape, strides, labels };
}

const sizeOf = (op: Operand, l: string): number => op.shape[op.labels.indexOf(l)];

/**
 * The operand's dimensions regrouped: each group (a list of labels, in order) becomes one
 * dimension. A view when every group's dimensions are nested in memory in that order,
 * else a contiguous copy of the permuted operand. The caller disposes the tensor.
 */
function grouped(op: Operand, groups: readonly (readonly string[])[]): Tensor {
  const shape = groups.map((g) => g.reduce((a, l) => a * sizeOf(op, l), 1));
  const { base } = op;
  if (shape.includes(0)) return full(shape, 0, { dtype: base.dtype, device: base.device });
  const strides: number[] = [];
  let viewable = true;
  for (const g of groups) {
    if (g.length === 0) {
      strides.push(0);
      continue;
    }
    let prev = op.labels.indexOf(g[0]);
    for (let i = 1; i < g.length; i++) {
      const d = op.labels.indexOf(g[i]);
      if (op.strides[prev] !== op.strides[d] * op.shape[d]) viewable = false;
      prev = d;
    }
    strides.push(op.strides[prev]);
  }
  if (viewable) return tensorOver(op, shape, strides);
  const order = groups.flat().map((l) => op.labels.indexOf(l));
  const permuted = tensorOver(
    op,
    order.map((d) => op.shape[d]),
    order.map((d) => op.strides[d]),
  );
  let copy: Tensor;
  try {
    copy = permuted.contiguous();
  } finally {
    permuted.dispose(); // the view retains op's memory, throw or not
  }
  try {
    return copy.reshape(shape);
  } finally {
    copy.dispose();
  }
}

/** Labels of op ordered as they lie in memory (outermost first). */
function memoryOrder(op: Operand, subset: readonly string[]): string[] {
  return [...subset].sort(
    (x, y) => op.strides[op.labels.indexOf(y)] - op.strides[op.labels.indexOf(x)],
  );
}

/** Sums the given labels out of op (a matmul with a vector of ones); consumes op, even on a throw. */
function reduce(op: Operand, sum: readonly string[]): Operand {
  if (sum.length === 0) return op;
  const keep = memoryOrder(
    op,
    op.labels.filter((l) => !sum.includes(l)),
  );
  let m: Tensor | undefined;
  let ones: Tensor | undefined;
  let r: Tensor;
  try {
    m = grouped(op, [keep, memoryOrder(op, sum)]);
    ones = full([m.shape[1]], 1, { dtype: m.dtype, device: m.device });
    r = matmul(m, ones);
  } finally {
    // Views and temporaries retain op's memory: free them whether or not matmul threw.
    m?.dispose();
    ones?.dispose();
    release(op);
  }
  return result(
    r,
    keep.map((l) => sizeOf(op, l)),
    keep,
  );
}

/** One pairwise step; `keep` holds the labels needed after it. Consumes a and b, even on a throw. */
function pair(a: Operand, b: Operand, keep: ReadonlySet<string>): Operand {
  const inA = new Set(a.labels);
  const inB = new Set(b.labels);
  try {
    a = reduce(
      a,
      a.labels.filter((l) => !inB.has(l) && !keep.has(l)),
    );
  } catch (e) {
    release(b); // a is consumed by reduce; b must be too
    throw e;
  }
  try {
    b = reduce(
      b,
      b.labels.filter((l) => !inA.has(l) && !keep.has(l)),
    );
  } catch (e) {
    release(a);
    throw e;
  }
  let A: Tensor | undefined;
  let B: Tensor | undefined;
  let r: Tensor;
  let shape: number[];
  let labels: string[];
  try {
    // Shared labels follow the larger operand's memory order, so it is viewed, not copied.
    const numel = (op: Operand) => op.shape.reduce((x, y) => x * y, 1);
    const big = numel(a) >= numel(b) ? a : b;
    const ordered = memoryOrder(
      big,
      big.labels.filter((l) => (big === a ? inB : inA).has(l)),
    );
    const batch = ordered.filter((l) => keep.has(l));
    const con = ordered.filter((l) => !keep.has(l));
    const mL = memoryOrder(
      a,
      a.labels.filter((l) => !inB.has(l)),
    );
    const nL = memoryOrder(
      b,
      b.labels.filter((l) => !inA.has(l)),
    );
    labels = [...batch, ...mL, ...nL];
    shape = [
      ...batch.map((l) => sizeOf(a, l)),
      ...mL.map((l) => sizeOf(a, l)),
      ...nL.map((l) => sizeOf(b, l)),
    ];
    if (con.length === 0) {
      // Nothing summed: a broadcast product [batch, m, 1] * [batch, 1, n].
      A = grouped(a, [batch, mL, []]);
      B = grouped(b, [batch, [], nL]);
      r = mul(A, B);
    } else if (batch.length === 0) {
      A = grouped(a, [mL, con]);
      B = grouped(b, [con, nL]);
      r = matmul(A, B);
    } else {
      A = grouped(a, [batch, mL, con]);
      B = grouped(b, [batch, con, nL]);
      r = matmul(A, B);
    }
  } finally {
    // The views retain a's and b's memory; a throw (a ShapeError from matmul) must free them too.
    A?.dispose();
    B?.dispose();
    release(a);
    release(b);
  }
  return result(r, shape, labels);
}

/** Contracts the operands of one step, pairwise from the left; consumes them, even on a throw. */
function step(ops: Operand[], keep: ReadonlySet<string>): Operand {
  if (ops.length === 1) {
    return reduce(
      ops[0],
      ops[0].labels.filter((l) => !keep.has(l)),
    );
  }
  let acc = ops[0];
  let i = 1;
  try {
    for (; i < ops.length; i++) {
      const k = new Set(keep);
      for (let j = i + 1; j < ops.length; j++) for (const l of ops[j].labels) k.add(l);
      acc = pair(acc, ops[i], k);
    }
  } catch (e) {
    // pair consumed acc and ops[i]; the operands not reached yet are released here.
    for (let j = i + 1; j < ops.length; j++) release(ops[j]);
    throw e;
  }
  return acc;
}

/**
 * Evaluates the einsum described by p along `path` (opt_einsum's linear form). Returns a
 * new contiguous tensor of the output's shape that shares no memory with the inputs.
 */
export function executePath(
  p: Pick<EinsumParams, "operands" | "inputs" | "output" | "sizes">,
  path: readonly (readonly number[])[],
): Tensor {
  let ops = p.operands.map((t, i) => prepare(t, p.inputs[i]));
  try {
    const outSet = new Set(p.output);
    for (const positions of path) {
      const chosen = positions.map((q) => ops[q]);
      const rest = ops.filter((_, q) => !positions.includes(q));
      const keep = new Set(outSet);
      for (const o of rest) for (const l of o.labels) keep.add(l);
      // step consumes `chosen` even when it throws (a later step's ShapeError must not
      // leak an earlier step's intermediate); the finally below releases `rest`.
      ops = rest;
      ops.push(step(chosen, keep));
    }
    const last = ops[0];
    ops = []; // reduce consumes it, even on a throw: never released twice
    const res = reduce(
      last,
      last.labels.filter((l) => !outSet.has(l)),
    );
    ops = [res];
    const outShape = p.output.map((l) => p.sizes[l]);
    // The output's labels present in the result, in output order (size-1 ones are not).
    const order = p.output.filter((l) => res.labels.includes(l)).map((l) => res.labels.indexOf(l));
    const view = tensorOver(
      res,
      order.map((d) => res.shape[d]),
      order.map((d) => res.strides[d]),
    );
    try {
      if (res.owned && view.isContiguous) {
        view.storage.retain();
        return new Tensor(view.storage, view.dtype, outShape, undefined, view.offset);
      }
      // A copy: the result aliases an input (an operand the path never touched), or is
      // not laid out in output order.
      const copy = view.isContiguous ? view.clone() : view.contiguous();
      const shaped = copy.reshape(outShape);
      copy.dispose();
      return shaped;
    } finally {
      view.dispose();
    }
  } finally {
    for (const op of ops) release(op);
  }
}
