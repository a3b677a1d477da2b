"""Every single-process training-program fixture passes `msmigrate parity` against its
conversion by msmigrate (the DDP program needs torchrun/msrun: tests/test_training_loops.py)."""
from __future__ import annotations

import re
import shutil

import pytest

from msmigrate.parity.check import Options, run_parity
from msmigrate.parity.report import format_text

from conftest import FIXTURES

PROGRAMS = FIXTURES / "programs"
# loop_ddp.py needs torchrun; train_ddp_single.py initializes communication only when launched so
SINGLE_PROCESS = sorted(p.name for p in PROGRAMS.glob("*.py")
                        if p.name.startswith(("train_", "loop_")) and "torchrun --" not in p.read_text())


def test_the_fixture_set_is_found():
    assert {"train_mlp.py", "train_cnn.py", "train_lstm.py", "loop_amp.py", "train_ddp_single.py"} <= set(SINGLE_PROCESS)
    assert "loop_ddp.py" not in SINGLE_PROCESS


# enough steps to reach what each program does only now and then
STEPS = {
    "loop_accum.py": 8,        # two applied updates (every 4th micro-batch)
    "loop_multiloss.py": 9,    # MultiStepLR milestones after epochs 1 and 2 (4 steps an epoch)
    "loop_trainer.py": 8,      # two epochs of the Trainer
    "loop_transformer.py": 6,  # past the 4-step warmup
    "loop_gru.py": 6,          # a whole cosine period (T_max=6)
    "train_random_depth.py": 6,   # a frozen depth draw (a compiled step) diverges by step 4
    "train_step_in_namespace.py": 6,   # two epochs, given on its command line
    "train_nets_side_by_side.py": 8,   # every network steps twice (two batches)
    "train_loop_summed_backward.py": 7,   # two updates of summed gradients (3 passes each)
    "train_annealed_globals.py": 4,     # into the second epoch: the new beta and lr
    "train_annealed_attribute.py": 4,   # into the second epoch: the new self.beta
    "train_one_step_top_level.py": 1,   # its only step
    "train_one_step_optimizer_last.py": 1,
    "train_dict_samples_distribution_forward.py": 8,   # both epochs, with the evaluation between
    "train_collate_torch_ops.py": 7,   # into the second epoch
    "train_loss_weights_soft_targets.py": 5,
    "train_distill_sequentials.py": 8,   # both epochs
    "train_best_weights_checkpoint.py": 6,   # saved at step 3, loaded at step 4
    "train_scheduler_resume.py": 7,   # five epochs, then the two resumed ones
    "train_optimizer_lr_resume.py": 7,   # five epochs, then the two resumed ones
    "train_optimizer_saved_alone.py": 9,   # six epochs, then the three resumed ones
    "train_checkpoint_named_dict.py": 7,   # four epochs, then the three resumed ones
    "train_micro_batches.py": 9,
    "train_accumulation_epoch_leftover.py": 10,
    "train_overridden_train_mode.py": 6,   # both epochs, the evaluation between, the detector's two steps
    "train_objects_made_anew_in_loop.py": 8,   # both loops, past each rebuild   # both epochs, the evaluation between   # both epochs: the fifth batch's gradients dropped   # three updates of three micro-batches each
    "train_cosine_scheduler_checkpoint.py": 5,   # saved at epoch 2, two epochs of the rebuilt scheduler
    "train_rnn_output_after_loop.py": 8,   # both epochs of four words
    "train_trainer_object.py": 6,   # past the end of the loader (StopIteration, iterated again)
    "train_infinite_loader.py": 6,
    "train_phase_conditional_step.py": 12,   # run_epoch, then both epochs of the phase loop (StepLR)
    "train_two_optimizers_in_function.py": 8,   # both parts
    "train_denoising_shuffled_batches.py": 8,   # both epochs, the evaluation loader between them
    "train_host_generator_batches.py": 4,
    "train_scaler_accumulation.py": 8,   # four accumulated updates
    "train_optimizer_list.py": 4,
    "train_losses_in_containers.py": 12,   # the loop, the Trainer and the losses passed to a function
    "train_pairs_passed_in_collate.py": 8,   # both epochs
    "train_mixup_numpy_draws.py": 5,
    "train_loss_reads_annealed_global.py": 10,   # both loops, the weights changing every step
    "train_forward_sets_loss_term.py": 6,   # the dict of criteria, then the Trainer's ModuleList
    "train_lr_groups_in_loops.py": 6,
    "train_task_heads_dict.py": 4,
    "train_optimizer_picked_in_loop.py": 4,
    "train_embedding_renorm.py": 4,
    "train_dataset_appended_rows.py": 4,
    "train_gan_label_refilled.py": 4,
}
# the program's own command line (msmigrate parity SCRIPT -- ARGS), given to both runs
ARGS = {"train_step_in_namespace.py": ("2",)}


@pytest.mark.framework
@pytest.mark.parametrize("name", SINGLE_PROCESS)
def test_converted_program_passes(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)   # the programs' checkpoints land there, not in the checkout
    steps = STEPS.get(name, 3)
    r = run_parity(PROGRAMS / name, None, Options(steps=steps, timeout=300, args=ARGS.get(name, ())))
    assert r["setup"]["converted"]
    assert r["passed"], format_text(r)
    assert r["torch_steps"] == r["ms_steps"] == steps


@pytest.mark.framework
def test_converted_amp_program_passes_with_mixed_precision_on(monkeypatch):
    monkeypatch.setenv("USE_AMP", "1")     # read by the program; the runners inherit the environment
    r = run_parity(PROGRAMS / "loop_amp.py", None, Options(steps=3, timeout=300))
    assert r["passed"], format_text(r)
    assert 0.1 < r["steps"][0]["torch_loss"] < 10   # the loss itself, not GradScaler's scaled loss


@pytest.mark.framework
@pytest.mark.parametrize("name", ["resume_checkpoint.py", "target_network_copy.py"])
def test_weights_loaded_between_steps_pass(name, tmp_path, monkeypatch):
    """Weights loaded between two steps (a checkpoint to resume, a DQN's target network) belong
    to the next step on both sides: torch's state is taken right after its optimizer step, as
    MindSpore's when the compiled step returns (before, torch's was taken at the next forward,
    after the load: 'fc1.weight differs' where the losses were equal)."""
    monkeypatch.chdir(tmp_path)   # the program writes its checkpoint where it runs
    r = run_parity(PROGRAMS / name, None, Options(steps=6, timeout=300))
    assert r["passed"], format_text(r)
    assert r["torch_steps"] == r["ms_steps"] == 6


@pytest.mark.framework
def test_step_defined_in_an_imported_project_module_is_hooked(tmp_path):
    """The training step lives in trainer.py (a Trainer class the main script imports): the
    MindSpore run hooks the converted step there too (before, only steps defined in the main
    script were: 'no call of a @ms.jit function named train_step* was seen'), and, left
    uncompiled, an undecorated train_step of that module as it is imported."""
    script = FIXTURES / "projects" / "trainer_module" / "train.py"
    r = run_parity(script, None, Options(steps=6, timeout=300), keep=tmp_path)
    assert r["passed"], format_text(r)
    assert r["torch_steps"] == r["ms_steps"] == 6
    uncompiled = tmp_path / "uncompiled"
    shutil.copytree(tmp_path / "converted", uncompiled)
    trainer = uncompiled / "trainer.py"
    source = trainer.read_text()
    assert "@ms.jit\n" in source
    trainer.write_text(re.sub(r"(?m)^ *@ms\.jit\n", "", source))
    r = run_parity(script, uncompiled / "train.py", Options(steps=6, timeout=300))
    assert r["passed"], format_text(r)
    assert r["ms_steps"] == 6


def test_program_files_are_the_scripts_directory_and_packages_under_it(tmp_path, monkeypatch):
    from msmigrate.parity import runner

    monkeypatch.setattr(runner, "_PROGRAM_DIR", [str(tmp_path.resolve())])
    assert runner._program_file(str(tmp_path / "trainer.py"))
    assert runner._program_file(str(tmp_path / "nets" / "blocks.py"))
    assert not runner._program_file(str(tmp_path / ".venv" / "lib" / "site-packages" / "x.py"))
    assert not runner._program_file(str(tmp_path.parent / "other.py"))


@pytest.mark.framework
def test_buffers_updated_by_a_forward_moved_after_the_step_are_compared_when_settled():
    """torch computes D(real) (BatchNorm in training mode) between the generator's loss and its
    optimizer step, only to print it; the conversion computes it after the compiled step. D's
    running statistics reach torch's values once that forward ran: compared then, not when the
    step returns (before: 'moving_mean after the step differs' at step 1)."""
    r = run_parity(PROGRAMS / "train_gan_shown_real.py", None, Options(steps=4, timeout=300))
    assert r["passed"], format_text(r)
    assert set(r["settled_after_step"]) == {"#1.1.moving_mean", "#1.1.moving_variance"}


@pytest.mark.framework
def test_batches_reshaped_before_the_step_are_replayed():
    """The step's arguments are views of the pipeline's batch (mz-402, mz-404): torch's batch is
    given where the loader yields it, so the views are torch's and both runs train on the same rows
    (they diverged at step 1 on differently shuffled data before)."""
    r = run_parity(PROGRAMS / "train_reshaped_batches.py", None, Options(steps=4, timeout=300))
    assert r["passed"], format_text(r)
    replay = r["setup"]["replay"]
    assert replay["from_loader"] == 4 and replay["same"] == 4 and not replay["mismatch"], replay


@pytest.mark.framework
def test_batches_cast_before_the_step_are_replayed():
    """The step's arguments are float32 casts of reshaped float64 NumPy windows (sp-lstm-stock):
    found in the pipeline's batch by comparing in their own dtype, torch's windows are replayed."""
    r = run_parity(PROGRAMS / "train_float64_windows_cast.py", None, Options(steps=4, timeout=300))
    assert r["passed"], format_text(r)
    replay = r["setup"]["replay"]
    assert replay["replayed"] == 4 and not replay["mismatch"], replay
