# cython: language_level=3

cdef class DStep:
    cdef public object prim
    cdef public tuple args
    cdef public tuple outs
    cdef public object stream
    cdef public object node
    cdef public tuple members
    cdef public object kernel


cdef class Step:
    cdef public object prim
    cdef public object impl
    cdef public object kernel
    cdef public tuple args
    cdef public Py_ssize_t out
    cdef public Py_ssize_t nout
    cdef public object stream
    cdef public object node
    cdef public tuple shape
    cdef public tuple dtypes
    cdef public tuple release
    cdef public bint broadcast_operands
    cdef public tuple donate
    cdef public object source


cdef class Tape:
    cdef public Py_ssize_t n_inputs
    cdef public Py_ssize_t n_slots
    cdef public list consts
    cdef public list const_data
    cdef public list steps
    cdef public tuple outputs
    cdef public tuple out_dtypes
    cdef public bint shapeless
    cdef public bint captures_tracer
    cdef public bint eager_ok
    cdef public object data_type
    cdef public object executable
    cdef public object scope
    cdef public object donation_base
    cdef public bint dup_outputs
    cdef public tuple out_plan
    cdef public bint single
    cdef public object stream
    cdef public object draft
    cdef public dict views
    cdef public Py_ssize_t donations
    cdef public object donors
    cdef public tuple read_inputs

    cpdef list run(self, list inputs)
    cpdef list call(self, list inputs)
    cdef tuple _donors(self)
    cpdef list replay_data(self, list inputs)
    cdef list _on_data(self, list inputs)
    cdef list _eager(self, list inputs)
    cdef list _arrays(self, list inputs, bint evaluate_now)
    cdef object _run_donating(self, Step step, list values, list datas)
    cdef _broadcast(self, Step step, list ins, bint evaluate_now)
    cpdef list _outputs(self, list values, list inputs, bint raw)
