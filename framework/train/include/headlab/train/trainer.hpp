// headlab/train/trainer.hpp: `headlab train`: one training loop for every task.
//
// train(options) runs the task the options name (copy: headlab/train/copy_task.hpp, translate:
// headlab/train/translate_task.hpp, induction: headlab/train/induction_task.hpp, lm: lm_task.hpp,
// recall: recall_task.hpp) through one shared
// loop (train/training_loop.hpp), whose step is the same for all of them:
//   loss = the task's loss on the step's batch (or --grad-accum batches);  backward;  clip by
//   global norm;  lr = schedule(step);  optimiser step. By default the schedule is Noam's and the
//   optimiser Adam (0.9, 0.98, 1e-9), as Vaswani et al.; --optimizer, --schedule and their values
//   choose others (headlab/train/optimizer_choice.hpp).
// Everything random draws from two generators (data, dropout) whose states are saved with the model
// and the optimiser (headlab/train/checkpoint.hpp), so a resumed run repeats the uninterrupted one
// bit for bit on one thread.
//
// A run directory holds config.ini (the resolved options: `headlab train --config` trains the same
// model), metrics.jsonl, checkpoint.safetensors, best.safetensors (the weights of the best evaluation
// by --select), loss.svg (loss and the task's metric: headlab/train/run_curves.hpp) and, at the
// end, summary.json: task, steps, train_seconds, valid_loss, valid_accuracy (copy: exact match;
// induction: repeated-half accuracy; recall: answers with every value right), valid_bleu (translate), select, best_step, best_value,
// parameters, flops_per_token, interrupted, diverged (1 or 0, a number for `headlab ablate`; with
// diverged_step when 1), loss_spikes and max_loss_jump (headlab/train/loss_spikes.hpp) and, for
// lm, sink_mass (lm_task.hpp).
//
// A loss that is not finite ends the run with a NumericalError naming the step, unless
// --stop-on-divergence: then the run stops there as a result. Its summary.json says diverged 1,
// diverged_step, valid_loss null (its weights are not scored); the checkpoint is that of the last
// step before, whose weights are finite (with non-finite weights none is written and the one from
// --save-every, if any, stays); `headlab train` prints one line and exits 0.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "headlab/train/checkpoint.hpp"
#include "headlab/train/copy_task.hpp"
#include "headlab/train/induction_task.hpp"
#include "headlab/train/lm_task.hpp"
#include "headlab/train/options.hpp"
#include "headlab/train/recall_task.hpp"
#include "headlab/train/translate_task.hpp"

namespace headlab {


struct TrainResult {
  std::size_t steps_done = 0;
  std::vector<double> losses;  // one per step, from step 1 (resumed runs include the earlier ones)
  double exact_match = 0.0;    // copy: held-out exact match of the final weights
  // induction: held-out loss over all targets, over the predictable repeated half (r_2..r_T of the
  // second copy) and over the first half, and accuracy on the repeated half (last evaluation).
  double repeated_loss = 0.0, first_half_loss = 0.0, repeated_accuracy = 0.0;
  // recall: held-out answers with every value right, and the share of values right (last evaluation).
  double answer_accuracy = 0.0, slot_accuracy = 0.0;
  double seconds = 0.0;        // wall time of this call
  // translate: validation BLEU (x100) and loss of the best evaluation (by --select), test BLEU of its weights.
  double valid_bleu = 0.0, valid_loss = 0.0, test_bleu_greedy = 0.0, test_bleu_beam = 0.0;
  double test_chrf_greedy = 0.0, test_chrf_beam = 0.0;  // x100, as BLEU
  double train_seconds = 0.0;  // training time, evaluation excluded
  std::string arithmetic;      // of every step: run_arithmetic (headlab/train/checkpoint.hpp)
  double valid_bits_per_char = 0.0;  // lm: the last validation in bits per character
  // The evaluation best.safetensors holds (by --select): its step and selected value (0, 0: none).
  std::size_t best_step = 0;
  double best_value = 0.0;
  bool interrupted = false;    // stopped early by request_stop() (SIGINT/SIGTERM in the CLI)
  // --stop-on-divergence: the run stopped because step `diverged_step` made a non-finite loss (in
  // its forward) or non-finite weights (its update); steps_done is the last step before it.
  bool diverged = false;
  std::size_t diverged_step = 0;
};

// Stop requests. The training loops check after every step: when one is pending,
// they save the checkpoint (with a run directory) and return with interrupted =
// true, clearing the request. request_stop is async-signal-safe, so a SIGINT or
// SIGTERM handler may call it; a request made before train() stops it after one step.
void request_stop();
bool stop_requested();
void clear_stop_request();

// Trains (or resumes) as the options say, printing progress to `log`.
TrainResult train(const TrainOptions& options, std::ostream& log);

}  // namespace headlab
