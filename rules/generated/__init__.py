"""Functions copied into converted files where MindSpore has no counterpart of a torch utility
(see ImportPlan.define): each is plain Python + NumPy + MindSpore, self-contained (its imports
inside), named `msmigrate_*` so that it reads as generated code."""
