# A product planned once and run by address (_executable.pyx): plan_product, run_product.

cdef struct gemm_plan_t:
    bint single                 # float32 (else float64)
    int ta, tb, m, n, k, lda, ldb, ldc
    Py_ssize_t item, nb, nd, madds
    Py_ssize_t dims[32]         # the batch's dimensions and byte strides per operand
    Py_ssize_t sa[32]
    Py_ssize_t sb[32]
    Py_ssize_t sc[32]

cdef int plan_product(object a, object b, object out, gemm_plan_t *p) except -1
cdef int run_product(const gemm_plan_t *p, char *pa, char *pb, char *pc) noexcept nogil
