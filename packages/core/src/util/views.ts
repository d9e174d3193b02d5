/**
 * Typed-array views of the CPU memory across an allocation. Growing a plain (unshared)
 * WASM memory, as a browser page that is not cross-origin isolated has, detaches every
 * view taken on its old buffer (length 0: set() throws a TypeError, reads give undefined).
 */

/** Where a view was: its byte offset and length, read before an allocation. */
export interface ViewPlace {
  byteOffset: number;
  length: number;
}

export const placeOf = (view: ArrayBufferView & { length: number }): ViewPlace => ({
  byteOffset: view.byteOffset,
  length: view.length,
});

/**
 * `view` after an allocation: itself, or, when the allocation's growth detached it, the
 * same place taken again over the memory's new `buffer`.
 */
export function retaken<T extends ArrayBufferView>(
  view: T,
  at: ViewPlace,
  buffer: ArrayBufferLike,
): T {
  if ((view as unknown as ArrayLike<unknown>).length === at.length) return view;
  const View = view.constructor as new (b: ArrayBufferLike, offset: number, n: number) => T;
  return new View(buffer, at.byteOffset, at.length);
}
