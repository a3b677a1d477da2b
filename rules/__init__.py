"""Migration knowledge: API mapping tables (`api/*.toml`), transforms for irregular APIs
(`transforms/`), and lint rules (`lint/`). The engine in `msmigrate` knows none of it."""

# Multi-statement rewrites run before the table-driven pass, in this order.
STRUCTURAL_PASSES = ["msmigrate.rules.split_statements:SplitStatementsPass",
                     "msmigrate.rules.conditional_steps:ConditionalStepsPass",
                     "msmigrate.rules.optimizer_lists:OptimizerListsPass",
                     "msmigrate.rules.requires_grad_flags:RequiresGradFlagsPass",
                     "msmigrate.rules.cell_lambdas:CellLambdasPass",
                     "msmigrate.rules.packed_sequences:PackedSequencesPass",
                     "msmigrate.rules.accelerate:AcceleratePass",
                     "msmigrate.rules.autograd_function:AutogradFunctionPass",
                     "msmigrate.rules.device_type:DeviceTypePass",
                     "msmigrate.rules.tensor_type_names:TensorTypeNamesPass",
                     "msmigrate.rules.layers_in_forward:LayersInForwardPass",
                     "msmigrate.rules.forward_caches:ForwardCachesPass",
                     "msmigrate.rules.layer_attributes:LayerAttributePass",
                     "msmigrate.rules.legacy_scalar_index:LegacyScalarIndexPass",
                     "msmigrate.rules.tensor_aug_assign:TensorAugAssignPass",
                     "msmigrate.rules.data_writes:DataWritesPass",
                     "msmigrate.rules.layer_resets:LayerResetsPass",
                     "msmigrate.rules.rebuilt_leaves:RebuiltLeavesPass",
                     "msmigrate.rules.late_unfreeze:LateUnfreezePass",
                     "msmigrate.rules.empty_cat:EmptyCatPass",
                     "msmigrate.rules.python_values:PythonValuesPass",
                     "msmigrate.rules.format_values:FormatValuesPass",
                     "msmigrate.rules.numpy_random:NumpyRandomPass",
                     "msmigrate.rules.numpy_operands:NumpyOperandsPass",
                     "msmigrate.rules.host_subsets:HostSubsetsPass",
                     "msmigrate.rules.loop_indices:LoopIndicesPass",
                     "msmigrate.rules.network_copies:NetworkCopiesPass",
                     "msmigrate.rules.rollout_values:RolloutValuesPass",
                     "msmigrate.rules.tape_grad:TapeGradPass",
                     "msmigrate.rules.compiled_forward:CompiledForwardPass",
                     "msmigrate.rules.training_loop:TrainingLoopPass"]

# The transform a record's `promote` field runs before its conversion (casts of arguments whose
# integer/bool dtype is visible in the source): rules/transforms/dtypes.py.
PROMOTE = "dtypes.promote"

# The transform a record's `inplace` field runs on its converted call (the value): writes it back
# into the first argument where torch would (rules/transforms/functional.py).
INPLACE = "functional.write_back"

# torch's `out=` argument: OUT_TARGET takes it off a call that is a statement of its own (the
# tensor to write), WRITE_OUT writes the converted call's value there (rules/transforms/functional.py).
OUT_TARGET = "functional.out_target"
WRITE_OUT = "functional.write_out"

# Array and image libraries whose objects have methods and attributes of torch's names computing
# their own values (SciPy's sparse `m.multiply(o)`, `m.T`, NumPy's `a.dot(b)`, PIL's
# `img.resize((w, h))`): on a value visibly made by one of them, these are left as written
# (msmigrate.foreign).
ARRAY_LIBRARIES = frozenset({"numpy", "scipy", "pandas", "PIL", "cv2"})

# Decorators that return the function they decorate (gradient modes): a function under one is
# still called as written, so what its calls pass in is known (msmigrate.arguments).
PLAIN_DECORATORS = frozenset({"torch.no_grad", "torch.inference_mode", "torch.enable_grad",
                              "torch.autograd.no_grad", "torch.autograd.grad_mode.no_grad"})

# The generated helper compiling network calls outside the train step (rules/compiled_forward.py):
# the converter's own check (msmigrate.compile_check) calls the network directly instead where
# the file has code a static graph would freeze or reject.
COMPILING_HELPER = "msmigrate_forward"
