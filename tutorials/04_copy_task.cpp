// Chapter 4: training a transformer to copy, and watching greedy decoding.
//
// The copy task (The Annotated Transformer): the source is a sequence of 10
// tokens, a start symbol 1 and nine symbols drawn from 1..10; the target is the
// same sequence. The decoder reads the target shifted right and predicts it:
//   decoder input  tgt[:, :-1] = 1 s1 s2 ... s8
//   targets        tgt[:, 1:]  =   s1 s2 ... s8 s9
// After training, greedy decoding starts from the start symbol and appends the
// most likely token, one at a time, reusing each layer's keys and values (KV cache).
//
// usage: tutorial_copy_task [--quick]   (--quick: a few steps, for the test suite)
#include <algorithm>
#include <cmath>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "headlab/headlab.hpp"
#include "tutorial_threads.hpp"
#include "headlab/train/trainer.hpp"

using namespace headlab;

int main(int argc, char** argv) {
  use_tutorial_threads();
  tune_allocator();
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;

  // ---- 1. What a batch looks like ----------------------------------------------
  Generator data_rng(7);
  const IndexArray batch = copy_task_batch(data_rng, 2, 10, 11);
  std::cout << "1. A batch of the copy task (B = 2, length 10, vocabulary 11; 0 is <pad>, 1 starts):\n";
  for (std::size_t b = 0; b < 2; ++b) {
    std::cout << "   source   ";
    for (std::size_t t = 0; t < 10; ++t) std::cout << std::setw(3) << batch(b, t);
    std::cout << "\n   dec. in  ";
    for (std::size_t t = 0; t < 9; ++t) std::cout << std::setw(3) << batch(b, t);
    std::cout << "\n   targets     ";
    for (std::size_t t = 1; t < 10; ++t) std::cout << std::setw(3) << batch(b, t);
    std::cout << "\n";
  }

  // ---- 2. Train ----------------------------------------------------------------------
  // The same loop as `headlab train --task copy`: Adam with the Noam schedule,
  // held-out exact match every 100 steps, stop at 100%.
  TrainOptions o;
  o.progress = "none";
  o.run_dir = quick ? "tutorial_copy_quick" : "tutorial_copy_run";  // checkpoint, metrics.jsonl, loss.svg
  o.overwrite = true;  // each run of the chapter replaces the last one's run directory
  if (quick) {
    o.steps = 20;
    o.eval_every = 10;
    o.eval_sequences = 20;
  }
  std::cout << "\n2. Training (" << (quick ? "quick: 20 steps" : "until 1000 held-out sequences are copied exactly")
            << ")\n";
  const TrainResult r = train(o, std::cout);
  std::cout << "   " << r.steps_done << " steps, loss " << r.losses.front() << " -> " << r.losses.back()
            << ", held-out exact match " << r.exact_match << "\n";
  if (!(r.losses.back() < r.losses.front())) {
    std::cerr << "the loss did not fall\n";
    return 1;
  }

  // ---- 3. Greedy decoding, step by step -----------------------------------------------
  // The trained model comes back from the run's checkpoint, as `headlab decode` loads it.
  LoadedModel m = load_trained_model(o.run_dir + "/checkpoint.safetensors");
  const IndexArray src = held_out_sequences(m.options, 1);
  std::cout << "\n3. Greedy decoding of a held-out sequence:";
  for (std::size_t t = 0; t < 10; ++t) std::cout << " " << src(0, t);
  std::cout << "\n";
  NoGradGuard no_grad;
  const Tensor<float> memory = m.model->encode(src, Masks{}, nullptr);  // (1, 10, 64), computed once
  std::vector<KVCache<float>> caches(m.model->decoder_layers());         // one per decoder layer
  IndexArray next = IndexArray::from_shape({1, 1});
  next(0, 0) = 1;
  std::cout << "   step | fed | top-3 next tokens (probability)          | cached keys per layer\n";
  bool all_right = true;
  for (std::size_t t = 1; t < 10; ++t) {
    const Tensor<float> logits = m.model->project(m.model->decode(memory, next, Masks{}, nullptr, &caches));
    const Array<float> p = softmax(logits, -1).value();  // (1, 1, V)
    std::vector<std::size_t> order(11);
    for (std::size_t v = 0; v < 11; ++v) order[v] = v;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return p(0, 0, a) > p(0, 0, b); });
    std::ostringstream top;
    for (std::size_t k = 0; k < 3; ++k)
      top << order[k] << " (" << std::fixed << std::setprecision(3) << p(0, 0, order[k]) << ")  ";
    std::cout << "   " << std::setw(4) << t << " | " << std::setw(3) << next(0, 0) << " | " << std::left << std::setw(40)
              << top.str() << std::right << " | " << caches[0].stored_tokens() << "\n";
    next(0, 0) = static_cast<std::int64_t>(order[0]);
    all_right = all_right && next(0, 0) == src(0, t);
  }
  std::cout << "   " << (all_right ? "copied exactly" : "not copied exactly (train longer: run without --quick)")
            << "\n";
  if (!quick && !all_right) return 1;
  return 0;
}
