// Python's NumPy arrays arrive as {dtype, shape, buffer: DataView}; every view reads them with `typed`.
// Inlined into the views that import it (see widgets/_base.py `static`).
// @ts-check

const TYPES = { int8: Int8Array, uint8: Uint8Array, int16: Int16Array, uint16: Uint16Array,
  int32: Int32Array, uint32: Uint32Array, float32: Float32Array, float64: Float64Array };

/** A {dtype, shape, buffer: DataView} from Python as a typed array. */
export function typed(a) {
  const T = TYPES[a.dtype];
  return new T(a.buffer.buffer, a.buffer.byteOffset, a.buffer.byteLength / T.BYTES_PER_ELEMENT);
}
