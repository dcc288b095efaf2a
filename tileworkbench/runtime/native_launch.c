/* The launch fast path in C: one argument profile of a kernel, checked, packed and launched with
 * no Python frame in between.
 *
 * A `Launcher` (launch.py builds one beside each Python launcher where this module compiles) holds
 * what its profile is: per argument, its exact type and how it is read (a PyTorch tensor, a CuPy
 * array, a scalar of one struct code, or a constant to compare), where its values go among the
 * kernel's parameters, and the tensor maps the kernel takes. `relaunch(stream, grid, args)` does what
 * the generated Python relaunch does, in the same order and with the same answers:
 *   - False where the arguments or the grid are not of this profile (ct.launch then takes its
 *     general path, which finds or builds the right launcher, or raises the error that says why);
 *   - the Python relaunch's own answer wherever a value needs more than this file knows: a scalar
 *     out of its type's range (the Python path raises the error naming it), a float that NumPy
 *     would round to inf (with NumPy's warning), an array no tensor map describes, a driver error
 *     (the Python path retries once and then raises with the launch configuration), and so on;
 *   - True once launched.
 * The GIL is held from the first read to the driver's return, and a launch that finds the launcher
 * busy (another thread ran Python code while reading a value) takes the Python path, so the
 * launcher's own parameter block needs no lock (the Python path has its own buffer and lock).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if PY_VERSION_HEX < 0x030B0000  /* public from Python 3.11 */
#define PyFloat_Pack2(x, p, le) _PyFloat_Pack2((x), (unsigned char *)(p), (le))
#endif

/* cuda.h's CUlaunchConfig (no launch attributes) and cuLaunchKernelEx, declared here so that this
 * file compiles without CUDA's headers: the driver's address comes from Python (ctypes). */
typedef struct {
    unsigned int grid[3];
    unsigned int block[3];
    unsigned int shared_bytes;
    void *stream;
    void *attributes;
    unsigned int attribute_count;
} LaunchConfig;
typedef int (*LaunchKernelEx)(const LaunchConfig *, void *, void **, void **);

#define MAX_RANK 8
#define TENSOR_MAP_BYTES 128
#define SIGNED_CODES "bhiq"
#define UNSIGNED_CODES "BHIQ"

enum ArgumentKind { TORCH_TENSOR, CUPY_ARRAY, SCALAR, CONSTANT };

typedef struct {
    enum ArgumentKind kind;
    PyObject *type;       /* the exact type the argument must have */
    PyObject *expected;   /* an array's dtype, or a constant's value */
    int rank;             /* arrays: the rank; scalars: the struct code */
    Py_ssize_t itemsize;  /* CuPy arrays: strides come in bytes */
    Py_ssize_t offset;    /* where its first value goes in the parameter block */
    Py_ssize_t tensor_map;  /* index of the tensor map describing this array, or -1 */
} Argument;

typedef struct {
    PyObject *dtype_name, *box;  /* what encode() takes besides the array */
    int swizzle;
    Py_ssize_t offset;
    int valid;                   /* whether `bytes` is the map of `ptr`, `shape`, `strides` */
    int64_t ptr, shape[MAX_RANK], strides[MAX_RANK];
    unsigned char bytes[TENSOR_MAP_BYTES];
} TensorMap;

typedef struct {
    PyObject_HEAD
    LaunchKernelEx launch_kernel;
    void *function;
    LaunchConfig config;
    unsigned char *memory;  /* the parameter block (64-byte aligned), and pointers into it */
    unsigned char *parameters;
    void **parameter_pointers;
    Py_ssize_t argument_count, map_count;
    Argument *arguments;
    TensorMap *maps;
    PyObject *python_relaunch;  /* the generated Python relaunch, for everything else */
    PyObject *stream_handle;    /* arrays.stream_handle, for streams that are not ints */
    PyObject *stream_attributes;  /* arrays' {stream type: the attribute holding its handle} */
    PyObject *encode;           /* tensor_maps.encode */
    PyObject *to_dlpack;        /* torch._C._to_dlpack, or None (then tensors are read attribute by attribute) */
    int busy;                   /* a relaunch is between its first read and its launch */
} Launcher;

static PyObject *str_dtype, *str_shape, *str_is_cuda, *str_stride, *str_data_ptr, *str_strides, *str_data, *str_ptr;

/* What a read answers: the value packed, not of this profile, or the Python path's business. */
enum Read { PACKED, MISMATCH, NEEDS_PYTHON, FAILED };

static enum Read read_int_tuple(PyObject *tuple, int rank, Py_ssize_t divisor, int64_t *out) {
    if (!PyTuple_Check(tuple) || PyTuple_GET_SIZE(tuple) != rank)
        return MISMATCH;
    for (int d = 0; d < rank; d++) {
        int overflow;
        long long v = PyLong_AsLongLongAndOverflow(PyTuple_GET_ITEM(tuple, d), &overflow);
        if (v == -1 && PyErr_Occurred())
            return FAILED;
        if (overflow || (divisor > 1 && v % divisor))
            return NEEDS_PYTHON;
        out[d] = v / divisor;
    }
    return PACKED;
}

/* The head of DLPack's DLTensor (dlpack.h), which a DLManagedTensor starts with. */
typedef struct {
    void *data;
    int32_t device_type, device_id;
    int32_t ndim;
    uint8_t code, bits;
    uint16_t lanes;
    int64_t *shape, *strides;
    uint64_t byte_offset;
} DLTensorHead;
#define DL_CUDA 2

/* A PyTorch tensor's pointer, shape and strides through one DLPack export (torch._C._to_dlpack),
 * a third of the time of reading them one by one. PyTorch exports a size-0 or size-1 axis with
 * stride 1, whatever its own stride: such a tensor's strides are read from x.stride(), so that both
 * paths pack the same values. MISMATCH for a tensor not on a CUDA device, NEEDS_PYTHON where the
 * export is refused (a tensor with its conjugate bit set, say). */
static enum Read read_torch_dlpack(Launcher *self, const Argument *a, PyObject *x, int64_t *ptr, int64_t *shape,
                                   int64_t *strides) {
    PyObject *capsule = PyObject_CallOneArg(self->to_dlpack, x);
    if (capsule == NULL) {
        PyErr_Clear();
        return NEEDS_PYTHON;
    }
    const DLTensorHead *t = PyCapsule_GetPointer(capsule, "dltensor");
    enum Read r = t == NULL ? FAILED : t->device_type != DL_CUDA || t->ndim != a->rank ? MISMATCH : PACKED;
    int squeezed = 0;
    for (int d = 0; r == PACKED && d < a->rank; d++) {
        shape[d] = t->shape[d];
        strides[d] = t->strides ? t->strides[d] : 0;
        squeezed |= shape[d] < 2;
    }
    if (r == PACKED) {
        if (t->strides == NULL) {  /* compact row-major, as DLPack says */
            int64_t step = 1;
            for (int d = a->rank - 1; d >= 0; d--)
                strides[d] = step, step *= shape[d];
        }
        *ptr = (int64_t)((uintptr_t)t->data + t->byte_offset);
    }
    Py_DECREF(capsule);  /* its destructor returns the export */
    if (r == PACKED && squeezed) {
        PyObject *stride_tuple = PyObject_CallMethodNoArgs(x, str_stride);
        r = stride_tuple ? read_int_tuple(stride_tuple, a->rank, 1, strides) : FAILED;
        Py_XDECREF(stride_tuple);
    }
    return r;
}

/* An array's pointer, shape and strides (in elements), read as the Python launcher reads them. */
static enum Read read_array(Launcher *self, const Argument *a, PyObject *x, int64_t *ptr, int64_t *shape,
                            int64_t *strides) {
    PyObject *dtype = PyObject_GetAttr(x, str_dtype);
    if (dtype == NULL)
        return FAILED;
    int same = dtype == a->expected ? 1 : a->kind == CUPY_ARRAY ? PyObject_RichCompareBool(dtype, a->expected, Py_EQ) : 0;
    Py_DECREF(dtype);
    if (same != 1)
        return same < 0 ? FAILED : MISMATCH;
    if (a->kind == TORCH_TENSOR && self->to_dlpack != Py_None)
        return read_torch_dlpack(self, a, x, ptr, shape, strides);
    PyObject *shape_tuple = PyObject_GetAttr(x, str_shape);
    if (shape_tuple == NULL)
        return FAILED;
    enum Read r = read_int_tuple(shape_tuple, a->rank, 1, shape);
    Py_DECREF(shape_tuple);
    if (r != PACKED)
        return r;
    PyObject *pointer, *stride_tuple;
    if (a->kind == TORCH_TENSOR) {
        PyObject *is_cuda = PyObject_GetAttr(x, str_is_cuda);
        if (is_cuda == NULL)
            return FAILED;
        Py_DECREF(is_cuda);
        if (is_cuda != Py_True)
            return MISMATCH;
        stride_tuple = PyObject_CallMethodNoArgs(x, str_stride);
        pointer = stride_tuple ? PyObject_CallMethodNoArgs(x, str_data_ptr) : NULL;
    } else {
        stride_tuple = PyObject_GetAttr(x, str_strides);
        PyObject *memory = stride_tuple ? PyObject_GetAttr(x, str_data) : NULL;
        pointer = memory ? PyObject_GetAttr(memory, str_ptr) : NULL;
        Py_XDECREF(memory);
    }
    if (pointer == NULL) {
        Py_XDECREF(stride_tuple);
        return FAILED;
    }
    r = read_int_tuple(stride_tuple, a->rank, a->kind == CUPY_ARRAY ? a->itemsize : 1, strides);
    Py_DECREF(stride_tuple);
    if (r == PACKED) {
        *ptr = (int64_t)PyLong_AsUnsignedLongLong(pointer);
        if (PyErr_Occurred())
            r = FAILED;
    }
    Py_DECREF(pointer);
    return r;
}

static int fits_int32(int64_t v) { return v >= INT32_MIN && v <= INT32_MAX; }

/* Python floats strictly inside this bound round to a finite float32 (launch.FLOAT32_FINITE) */
#define FLOAT32_FINITE 0x1.ffffffp+127
/* and to a finite float16 inside this one */
#define FLOAT16_FINITE 65520.0

static enum Read pack_scalar(int code, PyObject *value, unsigned char *out) {
    if (code == '?') {
        int truth = PyObject_IsTrue(value);
        if (truth < 0)
            return FAILED;
        *out = (unsigned char)truth;
        return PACKED;
    }
    if (strchr(SIGNED_CODES UNSIGNED_CODES, code)) {
        PyObject *index = PyNumber_Index(value);
        if (index == NULL)
            return FAILED;
        int overflow;
        long long v = PyLong_AsLongLongAndOverflow(index, &overflow);
        unsigned long long u = 0;
        int is_unsigned = strchr(UNSIGNED_CODES, code) != NULL;
        if (is_unsigned && overflow > 0) {  /* above INT64_MAX: only a uint64 takes it */
            u = PyLong_AsUnsignedLongLong(index);
            overflow = PyErr_Occurred() != NULL;
            PyErr_Clear();
            if (!overflow && code == 'Q') {
                Py_DECREF(index);
                memcpy(out, &u, 8);
                return PACKED;
            }
        }
        Py_DECREF(index);
        if (v == -1 && PyErr_Occurred())
            return FAILED;
        if (overflow)
            return NEEDS_PYTHON;
        int bytes = code == 'b' || code == 'B' ? 1 : code == 'h' || code == 'H' ? 2 : code == 'i' || code == 'I' ? 4 : 8;
        if (is_unsigned) {
            if (v < 0 || (bytes < 8 && (unsigned long long)v >> (8 * bytes)))
                return NEEDS_PYTHON;
        } else if (bytes < 8 && (v < -(1LL << (8 * bytes - 1)) || v >= (1LL << (8 * bytes - 1)))) {
            return NEEDS_PYTHON;
        }
        memcpy(out, &v, bytes);  /* little-endian: the low bytes */
        return PACKED;
    }
    double d = PyFloat_AsDouble(value);
    if (d == -1.0 && PyErr_Occurred())
        return FAILED;
    if (code == 'd') {
        memcpy(out, &d, 8);
        return PACKED;
    }
    if (code == 'f' && -FLOAT32_FINITE < d && d < FLOAT32_FINITE) {
        float f = (float)d;
        memcpy(out, &f, 4);
        return PACKED;
    }
    if (code == 'e' && -FLOAT16_FINITE < d && d < FLOAT16_FINITE)
        return PyFloat_Pack2(d, (char *)out, 1) ? FAILED : PACKED;
    return NEEDS_PYTHON;  /* nan, and values NumPy rounds to inf with a warning */
}

/* The handle of `stream`, as arrays.stream_handle finds it: an int as it is; else the attribute
 * remembered for its type (`cuda_stream`, `ptr`, ...) where that holds an int; else stream_handle's
 * answer. 0, or 1 where it is not a handle (the Python path raises the error that says so). */
static int read_stream(Launcher *self, PyObject *stream, void **handle) {
    PyObject *value = NULL;
    if (PyLong_CheckExact(stream)) {
        value = Py_NewRef(stream);
    } else {
        PyObject *attribute = PyDict_GetItemWithError(self->stream_attributes, (PyObject *)Py_TYPE(stream));
        if (attribute != NULL)
            value = PyObject_GetAttr(stream, attribute);
        if (value == NULL || !PyLong_CheckExact(value)) {
            PyErr_Clear();
            Py_XSETREF(value, PyObject_CallOneArg(self->stream_handle, stream));
        }
    }
    unsigned long long h = value ? PyLong_AsUnsignedLongLong(value) : 0;  /* as struct's "Q": none negative */
    Py_XDECREF(value);
    if (PyErr_Occurred()) {
        PyErr_Clear();
        return 1;
    }
    *handle = (void *)(uintptr_t)h;
    return 0;
}

#define GRID_LIMIT ((1LL << 24) - 1)  /* as arguments.normalize_grid */

static int read_grid(PyObject *grid, unsigned int out[3]) {
    if (!PyTuple_CheckExact(grid) || PyTuple_GET_SIZE(grid) < 1 || PyTuple_GET_SIZE(grid) > 3)
        return 0;
    out[0] = out[1] = out[2] = 1;
    for (Py_ssize_t d = 0; d < PyTuple_GET_SIZE(grid); d++) {
        PyObject *v = PyTuple_GET_ITEM(grid, d);
        if (!PyLong_CheckExact(v))
            return 0;
        long long n = PyLong_AsLongLong(v);
        if (n < 1 || n > GRID_LIMIT) {  /* ct.launch's general path says what is wrong */
            PyErr_Clear();
            return 0;
        }
        out[d] = (unsigned int)n;
    }
    return 1;
}

/* The tensor map of array argument `a` into the parameter block, encoded by tensor_maps.encode
 * where its array changed since the last launch; 0, or 1 where no map describes it. */
static int place_tensor_map(Launcher *self, TensorMap *m, int rank, int64_t ptr, const int64_t *shape,
                            const int64_t *strides) {
    int same = m->valid && m->ptr == ptr;
    for (int d = 0; same && d < rank; d++)
        same = m->shape[d] == shape[d] && m->strides[d] == strides[d];
    if (!same) {
        PyObject *shape_tuple = PyTuple_New(rank), *stride_tuple = PyTuple_New(rank);
        for (int d = 0; shape_tuple && stride_tuple && d < rank; d++) {
            PyTuple_SET_ITEM(shape_tuple, d, PyLong_FromLongLong(shape[d]));
            PyTuple_SET_ITEM(stride_tuple, d, PyLong_FromLongLong(strides[d]));
        }
        PyObject *bytes = shape_tuple && stride_tuple && !PyErr_Occurred()
            ? PyObject_CallFunction(self->encode, "OLOOOi", m->dtype_name, (long long)ptr, shape_tuple, stride_tuple,
                                    m->box, m->swizzle)
            : NULL;
        Py_XDECREF(shape_tuple);
        Py_XDECREF(stride_tuple);
        if (bytes == NULL)
            return -1;
        if (!PyBytes_Check(bytes) || PyBytes_GET_SIZE(bytes) != TENSOR_MAP_BYTES) {  /* None: no map */
            Py_DECREF(bytes);
            m->valid = 0;
            return 1;
        }
        memcpy(m->bytes, PyBytes_AS_STRING(bytes), TENSOR_MAP_BYTES);
        Py_DECREF(bytes);
        m->valid = 1, m->ptr = ptr;
        memcpy(m->shape, shape, rank * sizeof(int64_t));
        memcpy(m->strides, strides, rank * sizeof(int64_t));
    }
    memcpy(self->parameters + m->offset, m->bytes, TENSOR_MAP_BYTES);
    return 0;
}

static PyObject *python_relaunch(Launcher *self, PyObject *stream, PyObject *grid, PyObject *args) {
    PyObject *call[] = {stream, grid, args};
    return PyObject_Vectorcall(self->python_relaunch, call, 3, NULL);
}

#define CUDA_SUCCESS 0

static PyObject *pack_and_launch(Launcher *self, PyObject *stream, PyObject *grid, PyObject *args) {
    if (!PyTuple_Check(args) || PyTuple_GET_SIZE(args) != self->argument_count || !read_grid(grid, self->config.grid))
        Py_RETURN_FALSE;
    enum Read r = PACKED;
    for (Py_ssize_t k = 0; k < self->argument_count && r == PACKED; k++) {
        const Argument *a = &self->arguments[k];
        PyObject *value = PyTuple_GET_ITEM(args, k);
        if ((PyObject *)Py_TYPE(value) != a->type) {
            r = MISMATCH;
        } else if (a->kind == CONSTANT) {
            PyObject *compared = PyObject_RichCompare(value, a->expected, Py_EQ);  /* `==`, as Python's check */
            int equal = compared ? PyObject_IsTrue(compared) : -1;
            Py_XDECREF(compared);
            r = equal < 0 ? FAILED : equal ? PACKED : MISMATCH;
        } else if (a->kind == SCALAR) {
            r = pack_scalar(a->rank, value, self->parameters + a->offset);
        } else {
            int64_t ptr, shape[MAX_RANK], strides[MAX_RANK];
            r = read_array(self, a, value, &ptr, shape, strides);
            if (r != PACKED)
                break;
            unsigned char *out = self->parameters + a->offset;
            memcpy(out, &ptr, 8);
            for (int d = 0; d < a->rank; d++) {
                if (!fits_int32(shape[d]) || !fits_int32(strides[d])) {
                    r = NEEDS_PYTHON;
                    break;
                }
                int32_t s = (int32_t)shape[d], t = (int32_t)strides[d];
                memcpy(out + 8 + 4 * d, &s, 4);
                memcpy(out + 8 + 4 * (a->rank + d), &t, 4);
            }
            if (r == PACKED && a->tensor_map >= 0) {
                int placed = place_tensor_map(self, &self->maps[a->tensor_map], a->rank, ptr, shape, strides);
                r = placed < 0 ? FAILED : placed ? NEEDS_PYTHON : PACKED;
            }
        }
    }
    if (r == PACKED) {
        r = read_stream(self, stream, &self->config.stream) ? NEEDS_PYTHON : PACKED;
    }
    if (r == FAILED)  /* an argument that raised on being read: Python's path says what it is */
        PyErr_Clear(), r = NEEDS_PYTHON;
    if (r == MISMATCH)
        Py_RETURN_FALSE;
    if (r == NEEDS_PYTHON)
        return python_relaunch(self, stream, grid, args);
    /* The GIL stays held: launching is asynchronous, and the buffer is this launcher's alone */
    int status = self->launch_kernel(&self->config, self->function, self->parameter_pointers, NULL);
    if (status != CUDA_SUCCESS)  /* a thread without a context, or a launch the driver refused */
        return python_relaunch(self, stream, grid, args);
    Py_RETURN_TRUE;
}

/* relaunch(stream, grid, args) -> bool */
static PyObject *Launcher_relaunch(Launcher *self, PyObject *const *call, Py_ssize_t n) {
    if (n != 3) {
        PyErr_SetString(PyExc_TypeError, "relaunch(stream, grid, args)");
        return NULL;
    }
    /* Reading a value can run Python code (a stream's property, the tensor map encoder), where the
     * interpreter may switch threads: a launch that finds this launcher between another thread's
     * reads takes the Python path, which has its own buffer and lock. */
    if (self->busy)
        return python_relaunch(self, call[0], call[1], call[2]);
    self->busy = 1;
    PyObject *result = pack_and_launch(self, call[0], call[1], call[2]);
    self->busy = 0;
    return result;
}

static int parse_arguments(Launcher *self, PyObject *specs) {
    self->argument_count = PyTuple_GET_SIZE(specs);
    self->arguments = PyMem_Calloc(self->argument_count ? self->argument_count : 1, sizeof(Argument));
    if (self->arguments == NULL)
        return -1;
    for (Py_ssize_t k = 0; k < self->argument_count; k++) {
        Argument *a = &self->arguments[k];
        int kind;
        PyObject *type, *expected;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(specs, k), "iOOinn", &kind, &type, &expected, &a->rank, &a->itemsize,
                              &a->offset))
            return -1;
        if (a->rank > MAX_RANK && kind != SCALAR) {
            PyErr_SetString(PyExc_ValueError, "rank above 8");
            return -1;
        }
        a->kind = kind;
        a->type = Py_NewRef(type);
        a->expected = Py_NewRef(expected);
        a->tensor_map = -1;
    }
    return 0;
}

static int parse_maps(Launcher *self, PyObject *specs) {
    self->map_count = PyTuple_GET_SIZE(specs);
    self->maps = PyMem_Calloc(self->map_count ? self->map_count : 1, sizeof(TensorMap));
    if (self->maps == NULL)
        return -1;
    for (Py_ssize_t k = 0; k < self->map_count; k++) {
        TensorMap *m = &self->maps[k];
        Py_ssize_t argument;
        PyObject *name, *box;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(specs, k), "nOOin", &argument, &name, &box, &m->swizzle, &m->offset))
            return -1;
        if (argument < 0 || argument >= self->argument_count || self->arguments[argument].kind > CUPY_ARRAY) {
            PyErr_SetString(PyExc_ValueError, "a tensor map of an argument that is not an array");
            return -1;
        }
        m->dtype_name = Py_NewRef(name);
        m->box = Py_NewRef(box);
        self->arguments[argument].tensor_map = k;
    }
    return 0;
}

/* Launcher(launch_kernel, function, block, shared_bytes, parameter_bytes, offsets, arguments, maps,
 *          python_relaunch, stream_handle, stream_attributes, encode, to_dlpack)
 * launch_kernel and function: addresses; offsets: of each kernel parameter in the parameter block;
 * arguments: (kind, type, dtype or value, rank or struct code, itemsize, offset) per argument;
 * maps: (argument, dtype name, box, swizzle, offset) per tensor map. */
static int Launcher_init(Launcher *self, PyObject *args, PyObject *kwargs) {
    unsigned long long launch_kernel, function;
    unsigned int block, shared;
    Py_ssize_t parameter_bytes;
    PyObject *offsets, *arguments, *maps;
    if (!PyArg_ParseTuple(args, "KKIInO!O!O!OOO!OO", &launch_kernel, &function, &block, &shared, &parameter_bytes,
                          &PyTuple_Type, &offsets, &PyTuple_Type, &arguments, &PyTuple_Type, &maps,
                          &self->python_relaunch, &self->stream_handle, &PyDict_Type, &self->stream_attributes,
                          &self->encode, &self->to_dlpack))
        return -1;
    Py_INCREF(self->python_relaunch), Py_INCREF(self->stream_handle), Py_INCREF(self->stream_attributes);
    Py_INCREF(self->encode), Py_INCREF(self->to_dlpack);
    self->launch_kernel = (LaunchKernelEx)(uintptr_t)launch_kernel;
    self->function = (void *)(uintptr_t)function;
    self->config = (LaunchConfig){{1, 1, 1}, {block, 1, 1}, shared, NULL, NULL, 0};
    /* 64-byte aligned, as a CUtensorMap among the parameters must be in host memory too */
    self->memory = aligned_alloc(64, (parameter_bytes + 63) / 64 * 64 + 64);
    Py_ssize_t count = PyTuple_GET_SIZE(offsets);
    self->parameter_pointers = PyMem_Calloc(count ? count : 1, sizeof(void *));
    if (self->memory == NULL || self->parameter_pointers == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    self->parameters = self->memory;
    memset(self->parameters, 0, parameter_bytes);
    for (Py_ssize_t k = 0; k < count; k++) {
        Py_ssize_t offset = PyLong_AsSsize_t(PyTuple_GET_ITEM(offsets, k));
        if (offset < 0 || offset >= parameter_bytes) {
            PyErr_SetString(PyExc_ValueError, "a parameter offset outside the parameter block");
            return -1;
        }
        self->parameter_pointers[k] = self->parameters + offset;
    }
    return parse_arguments(self, arguments) < 0 || parse_maps(self, maps) < 0 ? -1 : 0;
}

static void Launcher_dealloc(Launcher *self) {
    for (Py_ssize_t k = 0; self->arguments && k < self->argument_count; k++)
        Py_XDECREF(self->arguments[k].type), Py_XDECREF(self->arguments[k].expected);
    for (Py_ssize_t k = 0; self->maps && k < self->map_count; k++)
        Py_XDECREF(self->maps[k].dtype_name), Py_XDECREF(self->maps[k].box);
    PyMem_Free(self->arguments);
    PyMem_Free(self->maps);
    PyMem_Free(self->parameter_pointers);
    free(self->memory);
    Py_XDECREF(self->python_relaunch);
    Py_XDECREF(self->stream_handle);
    Py_XDECREF(self->encode);
    Py_XDECREF(self->to_dlpack);
    Py_XDECREF(self->stream_attributes);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef Launcher_methods[] = {
    {"relaunch", (PyCFunction)(void (*)(void))Launcher_relaunch, METH_FASTCALL,
     "relaunch(stream, grid, args): launch if the arguments have this profile (True), else False"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject LauncherType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "tileworkbench_native_launch.Launcher",
    .tp_basicsize = sizeof(Launcher),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "One argument profile of a kernel, launched from C (see native_launch.c)",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Launcher_init,
    .tp_dealloc = (destructor)Launcher_dealloc,
    .tp_methods = Launcher_methods,
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "tileworkbench_native_launch", NULL, -1, NULL};

PyMODINIT_FUNC PyInit_tileworkbench_native_launch(void) {
    static PyObject **names[] = {&str_dtype, &str_shape, &str_is_cuda, &str_stride, &str_data_ptr, &str_strides,
                                 &str_data, &str_ptr};
    static const char *texts[] = {"dtype", "shape", "is_cuda", "stride", "data_ptr", "strides", "data", "ptr"};
    for (int k = 0; k < 8; k++)
        if ((*names[k] = PyUnicode_InternFromString(texts[k])) == NULL)
            return NULL;
    if (PyType_Ready(&LauncherType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddObjectRef(m, "Launcher", (PyObject *)&LauncherType) < 0
        || PyModule_AddIntConstant(m, "TORCH_TENSOR", TORCH_TENSOR) < 0
        || PyModule_AddIntConstant(m, "CUPY_ARRAY", CUPY_ARRAY) < 0
        || PyModule_AddIntConstant(m, "SCALAR", SCALAR) < 0 || PyModule_AddIntConstant(m, "CONSTANT", CONSTANT) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
