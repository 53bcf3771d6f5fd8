// Chapter 10: a character-level language model on the King James Bible, and sampling from it.
//
// nanoGPT's first demo (shakespeare_char) in headlab: every character is a token, a decoder-only
// transformer reads T characters and predicts each next one, and the loss is the mean negative
// log-likelihood per character. In bits, log2 of how many equally likely characters the model is
// still choosing between: 8 bits would be a random byte, about 4.4 bits is what character
// frequencies alone give on this text, and good models of English reach 1-1.5.
//
//   window  x_0 x_1 ... x_T           (T + 1 characters at a random start of the training text)
//   input   x_0 ... x_{T-1}   -> logits (B, T, V)
//   loss    mean over t of -log p(x_{t+1} | x_0..x_t)      nats/char;  bits/char = nats / ln 2
//
// Then generation: the prompt through the model once, then one character at a time through the
// KV cache, each drawn from softmax(logits / temperature) among the top-k.
//
// usage: tutorial_char_lm [--quick]   (--quick: a few steps, for the test suite; else 2 minutes)
#include <cmath>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <map>

#include "headlab/headlab.hpp"
#include "tutorial_threads.hpp"
#include "headlab/data/input_file.hpp"
#include "headlab/train/generation.hpp"
#include "headlab/train/trainer.hpp"

using namespace headlab;

int main(int argc, char** argv) {
  use_tutorial_threads();
  tune_allocator();
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  const std::string text_path = std::string(HEADLAB_DATASETS_DIR) + "/kjv/kjv.txt";

  // ---- 1. Characters as tokens --------------------------------------------------------------
  TrainOptions o = TrainOptions::defaults_for(Task::lm);
  o.text_file = text_path;
  const LmData data = load_lm_data(o);
  std::cout << "1. " << text_path << ": " << data.train.size() << " characters to train on, " << data.valid.size()
            << " held out (the end of the text); " << data.vocab.size() - LmVocabulary::num_specials
            << " distinct characters, ids 4.." << data.vocab.size() - 1 << " after 4 specials\n";
  const std::string verse = "In the beginning God created the heaven and the earth.";
  const std::vector<std::int64_t> ids = data.vocab.encode(verse);
  std::cout << "   \"" << verse.substr(0, 16) << "\" -> ";
  for (std::size_t i = 0; i < 16; ++i) std::cout << ids[i] << " ";
  std::cout << "\n   decode(encode(verse)) == verse: " << (data.vocab.decode(ids) == verse ? "yes" : "NO") << "\n";
  if (data.vocab.decode(ids) != verse) return 1;

  // What knowing only how often each character occurs is worth: the held-out cross-entropy of
  // the training text's character frequencies (add-one smoothed), in bits per character.
  std::map<std::int64_t, double> counts;
  for (std::int64_t id : data.train) counts[id] += 1;
  double unigram_bits = 0;
  const double total = double(data.train.size()) + double(data.vocab.size());
  for (std::int64_t id : data.valid) unigram_bits -= std::log2((counts[id] + 1) / total);
  unigram_bits /= double(data.valid.size());
  std::cout << "   character frequencies alone: " << std::fixed << std::setprecision(3) << unigram_bits
            << " bits/char on the held-out text\n" << std::defaultfloat;

  // ---- 2. Train -------------------------------------------------------------------------------
  // The same loop as `headlab train --task lm --text datasets/kjv/kjv.txt --time-budget 120`:
  // AdamW (weight decay on the matrices), a constant learning rate after 100 warm-up steps.
  o.progress = "none";
  o.run_dir = quick ? "tutorial_char_lm_quick" : "tutorial_char_lm_run";
  o.overwrite = true;
  if (quick) {
    o.steps = 30;
    o.eval_every = 30;
    o.eval_sequences = 16;
    o.warmup = 10;
  } else {
    o.steps = 0;  // no step cap: the budget stops the run
    o.time_budget = 120;
    o.eval_every = 200;
  }
  std::cout << "\n2. Training (" << (quick ? "quick: 30 steps" : "two minutes") << "): context " << o.length
            << ", d_model " << o.d_model << ", " << o.layers << " layers of " << o.heads << " heads\n";
  const TrainResult r = train(o, std::cout);
  const double bits = r.valid_loss / std::log(2.0);
  std::cout << "   " << r.steps_done << " steps in " << std::fixed << std::setprecision(1) << r.train_seconds
            << " s: validation " << std::setprecision(3) << r.valid_loss << " nats/char = " << bits
            << " bits/char (frequencies alone: " << unigram_bits << ")\n" << std::defaultfloat;
  if (!(r.losses.back() < r.losses.front())) {
    std::cout << "   the training loss did not fall\n";
    return 1;
  }
  if (!quick && !(bits < unigram_bits)) {
    std::cout << "   the model is no better than character frequencies\n";
    return 1;
  }

  // ---- 3. Sample --------------------------------------------------------------------------------
  // The trained weights (checkpoint.safetensors) back from disk, as `headlab generate` reads them.
  const LoadedModel m = load_trained_model(o.run_dir + "/checkpoint.safetensors");
  SamplingOptions sampling;
  sampling.temperature = 0.8;
  sampling.top_k = 20;
  Generator gen(1);
  const std::string prompt = "And God said, ";
  std::cout << "\n3. Sampling 200 characters after \"" << prompt << "\" (temperature 0.8, top-k 20):\n   " << prompt;
  generate(*m.lm, m.lm_vocab.encode(prompt), quick ? 20 : 200, sampling, gen,
           [&](const GeneratedToken& token) {
             const std::string c = m.lm_vocab.decode_one(token.id);
             std::cout << (c == "\n" ? std::string("\n   ") : c) << std::flush;
             return true;
           });
  std::cout << "\n\n   The same from the command line:\n"
            << "   headlab generate --checkpoint " << o.run_dir << "/checkpoint.safetensors --prompt \"" << prompt
            << "\" --temperature 0.8 --top-k 20\n";
  return 0;
}
