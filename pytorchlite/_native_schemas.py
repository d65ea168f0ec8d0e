"""PyTorch's schemas of the native functions that are written in Python here (Note [Native
signatures] in src/python/arg_parse.c): for each function name, its overloads as PyTorch
registers them (aten, without the namespace), read from torch 2.13, in the form its Python
binding takes them: overloads with named dimensions (Dimname), which pytorchlite does not
have, are left out; the outputs of a multi-output out= overload are one `Tensor[] out` (the
tuple PyTorch's binding takes: qr(A, out=(Q, R))); nonzero has its hand-written binding's
as_tuple.  Generated (a read of torch._C._jit_get_schemas_for_operator per name); keep it
sorted by name."""

SCHEMAS = {
    "addbmm": (
        "addbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, "
        "Scalar alpha=1) -> Tensor",
        "addbmm.out(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, "
        "Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)",
    ),
    "addmv_": (
        "addmv_(Tensor(a!) self, Tensor mat, Tensor vec, *, Scalar beta=1, "
        "Scalar alpha=1) -> Tensor(a!)",
    ),
    "addr": (
        "addr(Tensor self, Tensor vec1, Tensor vec2, *, Scalar beta=1, "
        "Scalar alpha=1) -> Tensor",
        "addr.out(Tensor self, Tensor vec1, Tensor vec2, *, Scalar beta=1, Scalar alpha=1, "
        "Tensor(a!) out) -> Tensor(a!)",
    ),
    "adjoint": (
        "adjoint(Tensor(a) self) -> Tensor(a)",
    ),
    "alias_copy": (
        "alias_copy(Tensor self) -> Tensor",
        "alias_copy.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)",
    ),
    "as_strided_": (
        "as_strided_(Tensor(a!) self, SymInt[] size, SymInt[] stride, "
        "SymInt? storage_offset=None) -> Tensor(a!)",
    ),
    "as_strided_copy": (
        "as_strided_copy(Tensor self, SymInt[] size, SymInt[] stride, "
        "SymInt? storage_offset=None) -> Tensor",
        "as_strided_copy.out(Tensor self, SymInt[] size, SymInt[] stride, "
        "SymInt? storage_offset=None, *, Tensor(a!) out) -> Tensor(a!)",
    ),
    "as_strided_scatter": (
        "as_strided_scatter(Tensor self, Tensor src, SymInt[] size, SymInt[] stride, "
        "SymInt? storage_offset=None) -> Tensor",
        "as_strided_scatter.out(Tensor self, Tensor src, SymInt[] size, SymInt[] stride, "
        "SymInt? storage_offset=None, *, Tensor(a!) out) -> Tensor(a!)",
    ),
    "bartlett_window": (
        "bartlett_window(int window_length, *, ScalarType? dtype=None, Layout? layout=None, "
        "Device? device=None, bool? pin_memory=None) -> Tensor",
        "bartlett_window.periodic(int window_length, bool periodic, *, ScalarType? dtype=None, "
        "Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
        "bartlett_window.out(int window_length, *, Tensor(a!) out) -> Tensor(a!)",
        "bartlett_window.periodic_out(int window_length, bool periodic, *, "
        "Tensor(a!) out) -> Tensor(a!)",
    ),
    "blackman_window": (
        "blackman_window(int window_length, *, ScalarType? dtype=None, Layout? layout=None, "
        "Device? device=None, bool? pin_memory=None) -> Tensor",
        "blackman_window.periodic(int window_length, bool periodic, *, ScalarType? dtype=None, "
        "Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
        "blackman_window.out(int window_length, *, Tensor(a!) out) -> Tensor(a!)",
        "blackman_window.periodic_out(int window_length, bool periodic, *, "
        "Tensor(a!) out) -> Tensor(a!)",
    ),
    "cholesky": (
        "cholesky(Tensor self, bool upper=False) -> Tensor",
        "cholesky.out(Tensor self, bool upper=False, *, Tensor(a!) out) -> Tensor(a!)",
    ),
    "cholesky_inverse": (
        "cholesky_inverse(Tensor self, bool upper=False) -> Tensor",
        "cholesky_inverse.out(Tensor self, bool upper=False, *, Tensor(a!) out) -> Tensor(a!)",
    ),
    "cholesky_solve": (
        "cholesky_solve(Tensor self, Tensor input2, bool upper=False) -> Tensor",
        "cholesky_solve.out(Tensor self, Tensor input2, bool upper=False, *, "
        "Tensor(a!) out) -> Tensor(a!)",
    ),
    "clamp_max_": (
        "clamp_max_(Tensor(a!) self, Scalar max) -> Tensor(a!)",
        "clamp_max_.Tensor(Tensor(a!) self, Tensor max) -> Tensor(a!)",
    ),
    "clamp_min_": (
        "clamp_min_(Tensor(a!) self, Scalar min) -> Tensor(a!)",
        "clamp_min_.Tensor(Tensor(a!) self, Tensor min) -> Tensor(a!)",
    ),
    "column_stack": (
        "column_stack(Tensor[] tensors) -> Tensor",
        "column_stack.out(Tensor[] tensors, *, Tensor(a!) out) -> Tensor(a!)",
    ),
    "combinations": (
        "combinations(Tensor self, int r=2, bool with_replacement=False) -> Tensor",
    ),
    "conj_physical_": (
        "conj_physical_(Tensor(a!) self) -> Tensor(a!)",
    ),
    "copysign": (
        "copysign.Tensor(Tensor self, Tensor other) -> Tensor",
        "copysign.Scalar(Tensor self, Scalar other) -> Tensor",
        "copysign.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)",
        "copysign.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)",
    ),
    "corrcoef": (
        "corrcoef(Tensor self) -> Tensor",
    ),
    "cov": (
        "cov(Tensor self, *, int correction=1, Tensor? fweights=None, "
        "Tensor? aweights=None) -> Tensor",
    ),
    "cumulative_trapezoid": (
        "cumulative_trapezoid.x(Tensor y, Tensor x, *, int dim=-1) -> Tensor",
        "cumulative_trapezoid.dx(Tensor y, *, Scalar dx=1, int dim=-1) -> Tensor",
    ),
    "deg2rad": (
        "deg2rad(Tensor self) -> Tensor",
        "deg2rad.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)",
    ),
    "deg2rad_": (
        "deg2rad_(Tensor(a!) self) -> Tensor(a!)",
    ),
    "detach_": (
        "detach_(Tensor(a!) self) -> Tensor(a!)",
    ),
    "detach_copy": (
        "detach_copy(Tensor self) -> Tensor",
        "detach_copy.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)",
    ),
    "diagflat": (
        "diagflat(Tensor self, int offset=0) -> Tensor",
    ),
    "diagonal_copy": (
        "diagonal_copy(Tensor self, int offset=0, int dim1=0, int dim2=1) -> Tensor",
        "diagonal_copy.out(Tensor self, int offset=0, int dim1=0, int dim2=1, *, "
        "Tensor(a!) out) -> Tensor(a!)",
    ),
    "diagonal_scatter": (
        "diagonal_scatter(Tensor self, Tensor src, int offset=0, int dim1=0, "
        "int dim2=1) -> Tensor",
        "diagonal_scatter.out(Tensor self, Tensor src, int offset=0, int dim1=0, int dim2=1, *, "
        "Tensor(a!) out) -> Tensor(a!)",
    ),
    "dist": (
        "dist(Tensor self, Tensor other, Scalar p=2) -> Tensor",
        "dist.out(Tensor self, Tensor other, Scalar p=2, *, Tensor(a!) out) -> Tensor(a!)",
    ),
    "dsplit": (
        "dsplit.int(Tensor(a -> *) self, int sections) -> Tensor(a)[]",
        "dsplit.array(Tensor(a -> *) self, int[] indices) -> Tensor(a)[]",
    ),
    "dstack": (
        "dstack(Tensor[] tensors) -> Tensor",
        "dstack.out(Tensor[] tensors, *, Tensor(a!) out) -> Tensor(a!)",
    ),
    "empty_permuted": (
        "empty_permuted(SymInt[] size, int[] physical_layout, *, ScalarType? dtype=None, "
        "Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
        "empty_permuted.out(SymInt[] size, int[] physical_layout, *, "
        "Tensor(a!) out) -> Tensor(a!)",
    ),
    "expand_copy": (
        "expand_copy(Tensor self, SymInt[] size, *, bool implicit=False) -> Tensor",
        "expand_copy.out(Tensor self, SymInt[] size, *, bool implicit=False, "
        "Tensor(a!) out) -> Tensor(a!)",
    ),
    "fill": (
        "fill.Scalar(Tensor self, Scalar value) -> Tensor",
        "fill.Scalar_out(Tensor self, Scalar value, *, Tensor(a!) out) -> Tensor(a!)",
        "fill.Tensor(Tensor self, Tensor value) -> Tensor",
        "fill.Tensor_out(Tensor self, Tensor value, *, Tensor(a!) out) -> Tensor(a!)",
    ),
    "float_power": (
        "float_power.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor",
        "float_power.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor",
        "float_power.Scalar(Scalar self, Tensor exponent) -> Tensor",
        "float_power.Tensor_Tensor_out(Tensor self, Tensor exponent, *, "
        "Tensor(a!) out) -> Tensor(a!)",
        "float_power.Scalar_out(Scalar self, Tensor exponent, *, Tensor(a!) out) -> Tensor(a!)",
        "float_power.Tensor_Scalar_out(Tensor self, Scalar exponent, *, "
        "Tensor(a!) out) -> Tensor(a!)",
    ),
    "frexp": (
        "frexp.Tensor(Tensor self) -> (Tensor mantissa, Tensor exponent)",
        "frexp.Tensor_out(Tensor self, *, Tensor(a!)[] out) -> (Tensor mantissa, "
        "Tensor exponent)",
    ),
    "frobenius_norm": (
        "frobenius_norm.dim(Tensor self, int[1] dim, bool keepdim=False) -> Tensor",
        "frobenius_norm.out(Tensor self, int[1] dim, bool keepdim=False, *, "
        "Tensor(a!) out) -> Tensor(a!)",
    ),
    "geqrf": (
        "geqrf(Tensor self) -> (Tensor a, Tensor tau)",
        "geqrf.a(Tensor self, *, Tensor(a!)[] out) -> (Tensor a, Tensor tau)",
    ),
    "get_device": (
        "get_device(Tensor self) -> int",
    ),
    "hamming_window": (
        "hamming_window(int window_length, *, ScalarType? dtype=None, Layout? layout=None, "
        "Device? device=None, bool? pin_memory=None) -> Tensor",
        "hamming_window.periodic(int window_length, bool periodic, *, ScalarType? dtype=None, "
        "Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
        "hamming_window.periodic_alpha(int window_length, bool periodic, float alpha, *, "
        "ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
        "bool? pin_memory=None) -> Tensor",
        "hamming_window.periodic_alpha_beta(int window_length, bool periodic, float alpha, "
        "float beta, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
        "bool? pin_memory=None) -> Tensor",
        "hamming_window.out(int window_length, *, Tensor(a!) out) -> Tensor(a!)",
        "hamming_window.periodic_out(int window_length, bool periodic, *, "
        "Tensor(a!) out) -> Tensor(a!)",
        "hamming_window.periodic_alpha_out(int window_length, bool periodic, float alpha, *, "
        "Tensor(a!) out) -> Tensor(a!)",
        "hamming_window.periodic_alpha_beta_out(int window_length, bool periodic, float alpha, "
        "float beta, *, Tensor(a!) out) -> Tensor(a!)",
    ),
    "hann_window": (
        "hann_window(int window_length, *, ScalarType? dtype=None, Layout? layout=None, "
        "Device? device=None, bool? pin_memory=None) -> Tensor",
        "hann_window.periodic(int window_length, bool periodic, *, ScalarType? dtype=None, "
        "Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
        "hann_window.out(int window_length, *, Tensor(a!) out) -> Tensor(a!)",
        "hann_window.periodic_out(int window_length, bool periodic, *, "
        "Tensor(a!) out) -> Tensor(a!)",
    ),
    "heaviside": (
        "heaviside(Tensor self, Tensor values) -> Tensor",
        "heaviside.out(Tensor self, Tensor values, *, Tensor(a!) out) -> Tensor(a!)",
    ),
    "histogram": (
        "histogram.bins_tensor(Tensor self, Tensor bins, *, Tensor? weight=None, "
        "bool density=False) -> (Tensor hist, Tensor bin_edges)",
        "histogram.bins_tensor_out(Tensor self, Tensor bins, *, Tensor? weight=None, "
        "bool density=False, Tensor(a!)[] out) -> (Tensor hist, Tensor bin_edges)",
        "histogram.bin_ct(Tensor self, int bins=100, *, float[]? range=None, "
        "Tensor? weight=None, bool density=False) -> (Tensor hist, Tensor bin_edges)",
        "histogram.bin_ct_out(Tensor self, int bins=100, *, float[]? range=None, "
        "Tensor? weight=None, bool density=False, Tensor(a!)[] out) -> (Tensor hist, "
        "Tensor bin_edges)",
    ),
    "histogramdd": (
        "histogramdd(Tensor self, int[] bins, float[]? range=None, Tensor? weight=None, "
        "bool density=False) -> (Tensor hist, Tensor[] bin_edges)",
        "histogramdd.int_bins(Tensor self, int bins, float[]? range=None, Tensor? weight=None, "
        "bool density=False) -> (Tensor hist, Tensor[] bin_edges)",
        "histogramdd.TensorList_bins(Tensor self, Tensor[] bins, float[]? range=None, "
        "Tensor? weight=None, bool density=False) -> (Tensor hist, Tensor[] bin_edges)",
    ),
    "hsplit": (
        "hsplit.int(Tensor(a -> *) self, int sections) -> Tensor(a)[]",
        "hsplit.array(Tensor(a -> *) self, int[] indices) -> Tensor(a)[]",
    ),
    "index_reduce": (
        "index_reduce(Tensor self, int dim, Tensor index, Tensor source, str reduce, *, "
        "bool include_self=True) -> Tensor",
        "index_reduce.out(Tensor self, int dim, Tensor index, Tensor source, str reduce, *, "
        "bool include_self=True, Tensor(a!) out) -> Tensor(a!)",
    ),
    "indices_copy": (
        "indices_copy(Tensor self) -> Tensor",
        "indices_copy.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)",
    ),
    "inner": (
        "inner(Tensor self, Tensor other) -> Tensor",
        "inner.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)",
    ),
    "is_complex": (
        "is_complex(Tensor self) -> bool",
    ),
    "is_conj": (
        "is_conj(Tensor self) -> bool",
    ),
    "is_distributed": (
        "is_distributed(Tensor self) -> bool",
    ),
    "is_floating_point": (
        "is_floating_point(Tensor self) -> bool",
    ),
    "is_neg": (
        "is_neg(Tensor self) -> bool",
    ),
    "is_nonzero": (
        "is_nonzero(Tensor self) -> bool",
    ),
    "is_same_size": (
        "is_same_size(Tensor self, Tensor other) -> bool",
    ),
    "is_signed": (
        "is_signed(Tensor self) -> bool",
    ),
    "isin": (
        "isin.Tensor_Tensor(Tensor elements, Tensor test_elements, *, bool assume_unique=False, "
        "bool invert=False) -> Tensor",
        "isin.Tensor_Tensor_out(Tensor elements, Tensor test_elements, *, "
        "bool assume_unique=False, bool invert=False, Tensor(a!) out) -> Tensor(a!)",
        "isin.Tensor_Scalar(Tensor elements, Scalar test_element, *, bool assume_unique=False, "
        "bool invert=False) -> Tensor",
        "isin.Tensor_Scalar_out(Tensor elements, Scalar test_element, *, "
        "bool assume_unique=False, bool invert=False, Tensor(a!) out) -> Tensor(a!)",
        "isin.Scalar_Tensor(Scalar element, Tensor test_elements, *, bool assume_unique=False, "
        "bool invert=False) -> Tensor",
        "isin.Scalar_Tensor_out(Scalar element, Tensor test_elements, *, "
        "bool assume_unique=False, bool invert=False, Tensor(a!) out) -> Tensor(a!)",
    ),
    "isneginf": (
        "isneginf(Tensor self) -> Tensor",
        "isneginf.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)",
    ),
    "isposinf": (
        "isposinf(Tensor self) -> Tensor",
        "isposinf.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)",
    ),
    "isreal": (
        "isreal(Tensor self) -> Tensor",
    ),
    "istft": (
        "istft(Tensor self, int n_fft, int? hop_length=None, int? win_length=None, "
        "Tensor? window=None, bool center=True, bool normalized=False, bool? onesided=None, "
        "int? length=None, bool return_complex=False) -> Tensor",
    ),
    "kaiser_window": (
        "kaiser_window(int window_length, *, ScalarType? dtype=None, Layout? layout=None, "
        "Device? device=None, bool? pin_memory=None) -> Tensor",
        "kaiser_window.periodic(int window_length, bool periodic, *, ScalarType? dtype=None, "
        "Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
        "kaiser_window.beta(int window_length, bool periodic, float beta, *, "
        "ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
        "bool? pin_memory=None) -> Tensor",
        "kaiser_window.out(int window_length, *, Tensor(a!) out) -> Tensor(a!)",
        "kaiser_window.periodic_out(int window_length, bool periodic, *, "
        "Tensor(a!) out) -> Tensor(a!)",
        "kaiser_window.beta_out(int window_length, bool periodic, float beta, *, "
        "Tensor(a!) out) -> Tensor(a!)",
    ),
    "ldexp": (
        "ldexp.Tensor(Tensor self, Tensor other) -> Tensor",
        "ldexp.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)",
    ),
    "ldexp_": (
        "ldexp_(Tensor(a!) self, Tensor other) -> Tensor(a!)",
    ),
    "logaddexp": (
        "logaddexp(Tensor self, Tensor other) -> Tensor",
        "logaddexp.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)",
    ),
    "logaddexp2": (
        "logaddexp2(Tensor self, Tensor other) -> Tensor",
        "logaddexp2.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)",
    ),
    "logdet": (
        "logdet(Tensor self) -> Tensor",
    ),
    "logit_": (
        "logit_(Tensor(a!) self, float? eps=None) -> Tensor(a!)",
    ),
    "lu_solve": (
        "lu_solve(Tensor self, Tensor LU_data, Tensor LU_pivots) -> Tensor",
        "lu_solve.out(Tensor self, Tensor LU_data, Tensor LU_pivots, *, "
        "Tensor(a!) out) -> Tensor(a!)",
    ),
    "lu_unpack": (
        "lu_unpack(Tensor LU_data, Tensor LU_pivots, bool unpack_data=True, "
        "bool unpack_pivots=True) -> (Tensor P, Tensor L, Tensor U)",
        "lu_unpack.out(Tensor LU_data, Tensor LU_pivots, bool unpack_data=True, "
        "bool unpack_pivots=True, *, Tensor(a!)[] out) -> (Tensor P, Tensor L, Tensor U)",
    ),
    "mvlgamma": (
        "mvlgamma(Tensor self, int p) -> Tensor",
        "mvlgamma.out(Tensor self, int p, *, Tensor(a!) out) -> Tensor(a!)",
    ),
    "nanmean": (
        "nanmean(Tensor self, int[1]? dim=None, bool keepdim=False, *, "
        "ScalarType? dtype=None) -> Tensor",
        "nanmean.out(Tensor self, int[1]? dim=None, bool keepdim=False, *, "
        "ScalarType? dtype=None, Tensor(a!) out) -> Tensor(a!)",
    ),
    "narrow_copy": (
        "narrow_copy(Tensor self, int dim, SymInt start, SymInt length) -> Tensor",
        "narrow_copy.out(Tensor self, int dim, SymInt start, SymInt length, *, "
        "Tensor(a!) out) -> Tensor(a!)",
    ),
    "nonzero": (
        "nonzero(Tensor self, *, bool as_tuple=False) -> Tensor",
        "nonzero.out(Tensor self, *, bool as_tuple=False, Tensor(a!) out) -> Tensor(a!)",
    ),
    "nonzero_static": (
        "nonzero_static(Tensor self, *, SymInt size, int fill_value=-1) -> Tensor",
        "nonzero_static.out(Tensor self, *, SymInt size, int fill_value=-1, "
        "Tensor(a!) out) -> Tensor(a!)",
    ),
    "nuclear_norm": (
        "nuclear_norm(Tensor self, bool keepdim=False) -> Tensor",
        "nuclear_norm.dim(Tensor self, int[2] dim, bool keepdim=False) -> Tensor",
        "nuclear_norm.out(Tensor self, bool keepdim=False, *, Tensor(a!) out) -> Tensor(a!)",
        "nuclear_norm.dim_out(Tensor self, int[2] dim, bool keepdim=False, *, "
        "Tensor(a!) out) -> Tensor(a!)",
    ),
    "numel": (
        "numel(Tensor self) -> int",
    ),
    "orgqr": (
        "orgqr(Tensor self, Tensor input2) -> Tensor",
        "orgqr.out(Tensor self, Tensor input2, *, Tensor(a!) out) -> Tensor(a!)",
    ),
    "ormqr": (
        "ormqr(Tensor self, Tensor input2, Tensor input3, bool left=True, "
        "bool transpose=False) -> Tensor",
        "ormqr.out(Tensor self, Tensor input2, Tensor input3, bool left=True, "
        "bool transpose=False, *, Tensor(a!) out) -> Tensor(a!)",
    ),
    "permute_copy": (
        "permute_copy(Tensor self, int[] dims) -> Tensor",
        "permute_copy.out(Tensor self, int[] dims, *, Tensor(a!) out) -> Tensor(a!)",
    ),
    "pinverse": (
        "pinverse(Tensor self, float rcond=1.0000000000000001e-15) -> Tensor",
    ),
    "positive": (
        "positive(Tensor(a) self) -> Tensor(a)",
    ),
    "put": (
        "put(Tensor self, Tensor index, Tensor source, bool accumulate=False) -> Tensor",
        "put.out(Tensor self, Tensor index, Tensor source, bool accumulate=False, *, "
        "Tensor(a!) out) -> Tensor(a!)",
    ),
    "qr": (
        "qr(Tensor self, bool some=True) -> (Tensor Q, Tensor R)",
        "qr.Q(Tensor self, bool some=True, *, Tensor(a!)[] out) -> (Tensor Q, Tensor R)",
    ),
    "rad2deg": (
        "rad2deg(Tensor self) -> Tensor",
        "rad2deg.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)",
    ),
    "rad2deg_": (
        "rad2deg_(Tensor(a!) self) -> Tensor(a!)",
    ),
    "range": (
        "range.step(Scalar start, Scalar end, Scalar step=1, *, ScalarType? dtype=None, "
        "Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor",
        "range(Scalar start, Scalar end, *, ScalarType? dtype=None, Layout? layout=None, "
        "Device? device=None, bool? pin_memory=None) -> Tensor",
        "range.out(Scalar start, Scalar end, Scalar step=1, *, Tensor(a!) out) -> Tensor(a!)",
        "range.out_(Scalar start, Scalar end, *, Tensor(a!) out) -> Tensor(a!)",
    ),
    "ravel": (
        "ravel(Tensor(a) self) -> Tensor(a)",
    ),
    "resize_as_": (
        "resize_as_(Tensor(a!) self, Tensor the_template, *, "
        "MemoryFormat? memory_format=None) -> Tensor(a!)",
    ),
    "resolve_conj": (
        "resolve_conj(Tensor(a) self) -> Tensor(a)",
    ),
    "resolve_neg": (
        "resolve_neg(Tensor(a) self) -> Tensor(a)",
    ),
    "select_copy": (
        "select_copy.int(Tensor self, int dim, SymInt index) -> Tensor",
        "select_copy.int_out(Tensor self, int dim, SymInt index, *, "
        "Tensor(a!) out) -> Tensor(a!)",
    ),
    "select_scatter": (
        "select_scatter(Tensor self, Tensor src, int dim, SymInt index) -> Tensor",
        "select_scatter.out(Tensor self, Tensor src, int dim, SymInt index, *, "
        "Tensor(a!) out) -> Tensor(a!)",
    ),
    "sgn": (
        "sgn(Tensor self) -> Tensor",
        "sgn.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)",
    ),
    "signbit": (
        "signbit(Tensor self) -> Tensor",
        "signbit.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)",
    ),
    "sinc_": (
        "sinc_(Tensor(a!) self) -> Tensor(a!)",
    ),
    "slice_copy": (
        "slice_copy.Tensor(Tensor self, int dim=0, SymInt? start=None, SymInt? end=None, "
        "SymInt step=1) -> Tensor",
        "slice_copy.Tensor_out(Tensor self, int dim=0, SymInt? start=None, SymInt? end=None, "
        "SymInt step=1, *, Tensor(a!) out) -> Tensor(a!)",
    ),
    "slice_scatter": (
        "slice_scatter(Tensor self, Tensor src, int dim=0, SymInt? start=None, "
        "SymInt? end=None, SymInt step=1) -> Tensor",
        "slice_scatter.out(Tensor self, Tensor src, int dim=0, SymInt? start=None, "
        "SymInt? end=None, SymInt step=1, *, Tensor(a!) out) -> Tensor(a!)",
    ),
    "split_copy": (
        "split_copy.Tensor(Tensor self, SymInt split_size, int dim=0) -> Tensor[]",
        "split_copy.Tensor_out(Tensor self, SymInt split_size, int dim=0, *, "
        "Tensor(a!)[] out) -> ()",
    ),
    "split_with_sizes_copy": (
        "split_with_sizes_copy(Tensor self, SymInt[] split_sizes, int dim=0) -> Tensor[]",
        "split_with_sizes_copy.out(Tensor self, SymInt[] split_sizes, int dim=0, *, "
        "Tensor(a!)[] out) -> ()",
    ),
    "squeeze_copy": (
        "squeeze_copy(Tensor self) -> Tensor",
        "squeeze_copy.dim(Tensor self, int dim) -> Tensor",
        "squeeze_copy.dims(Tensor self, int[] dim) -> Tensor",
        "squeeze_copy.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)",
        "squeeze_copy.dim_out(Tensor self, int dim, *, Tensor(a!) out) -> Tensor(a!)",
        "squeeze_copy.dims_out(Tensor self, int[] dim, *, Tensor(a!) out) -> Tensor(a!)",
    ),
    "t_copy": (
        "t_copy(Tensor self) -> Tensor",
        "t_copy.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)",
    ),
    "transpose_copy": (
        "transpose_copy.int(Tensor self, int dim0, int dim1) -> Tensor",
        "transpose_copy.int_out(Tensor self, int dim0, int dim1, *, "
        "Tensor(a!) out) -> Tensor(a!)",
    ),
    "trapezoid": (
        "trapezoid.x(Tensor y, Tensor x, *, int dim=-1) -> Tensor",
        "trapezoid.dx(Tensor y, *, Scalar dx=1, int dim=-1) -> Tensor",
    ),
    "trapz": (
        "trapz.x(Tensor y, Tensor x, *, int dim=-1) -> Tensor",
        "trapz.dx(Tensor y, *, float dx=1., int dim=-1) -> Tensor",
    ),
    "triangular_solve": (
        "triangular_solve(Tensor self, Tensor A, bool upper=True, bool transpose=False, "
        "bool unitriangular=False) -> (Tensor solution, Tensor cloned_coefficient)",
        "triangular_solve.X(Tensor self, Tensor A, bool upper=True, bool transpose=False, "
        "bool unitriangular=False, *, Tensor(a!)[] out) -> (Tensor solution, "
        "Tensor cloned_coefficient)",
    ),
    "unbind_copy": (
        "unbind_copy.int(Tensor self, int dim=0) -> Tensor[]",
        "unbind_copy.int_out(Tensor self, int dim=0, *, Tensor(a!)[] out) -> ()",
    ),
    "unfold_copy": (
        "unfold_copy(Tensor self, int dimension, int size, int step) -> Tensor",
        "unfold_copy.out(Tensor self, int dimension, int size, int step, *, "
        "Tensor(a!) out) -> Tensor(a!)",
    ),
    "unsafe_chunk": (
        "unsafe_chunk(Tensor self, int chunks, int dim=0) -> Tensor[]",
    ),
    "unsafe_split": (
        "unsafe_split.Tensor(Tensor self, SymInt split_size, int dim=0) -> Tensor[]",
        "unsafe_split.Tensor_out(Tensor self, SymInt split_size, int dim=0, *, "
        "Tensor(a!)[] out) -> ()",
    ),
    "unsafe_split_with_sizes": (
        "unsafe_split_with_sizes(Tensor self, SymInt[] split_sizes, int dim=0) -> Tensor[]",
        "unsafe_split_with_sizes.out(Tensor self, SymInt[] split_sizes, int dim=0, *, "
        "Tensor(a!)[] out) -> ()",
    ),
    "unsqueeze_copy": (
        "unsqueeze_copy(Tensor self, int dim) -> Tensor",
        "unsqueeze_copy.out(Tensor self, int dim, *, Tensor(a!) out) -> Tensor(a!)",
    ),
    "values_copy": (
        "values_copy(Tensor self) -> Tensor",
        "values_copy.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)",
    ),
    "vander": (
        "vander(Tensor x, int? N=None, bool increasing=False) -> Tensor",
    ),
    "view_as_complex_copy": (
        "view_as_complex_copy(Tensor self) -> Tensor",
        "view_as_complex_copy.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)",
    ),
    "view_as_real_copy": (
        "view_as_real_copy(Tensor self) -> Tensor",
        "view_as_real_copy.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)",
    ),
    "view_copy": (
        "view_copy(Tensor self, SymInt[] size) -> Tensor",
        "view_copy.dtype(Tensor self, ScalarType dtype) -> Tensor",
        "view_copy.out(Tensor self, SymInt[] size, *, Tensor(a!) out) -> Tensor(a!)",
        "view_copy.dtype_out(Tensor self, ScalarType dtype, *, Tensor(a!) out) -> Tensor(a!)",
    ),
    "vsplit": (
        "vsplit.int(Tensor(a -> *) self, int sections) -> Tensor(a)[]",
        "vsplit.array(Tensor(a -> *) self, int[] indices) -> Tensor(a)[]",
    ),
    "xlogy_": (
        "xlogy_.Tensor(Tensor(a!) self, Tensor other) -> Tensor(a!)",
        "xlogy_.Scalar_Other(Tensor(a!) self, Scalar other) -> Tensor(a!)",
    ),
}
