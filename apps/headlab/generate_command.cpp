// generate_command.cpp: `headlab generate`, tokens from a decoder-only checkpoint streamed to stdout.
#include <iostream>

#include "commands.hpp"
#include "token_ids.hpp"
#include "headlab/core/user_input.hpp"
#include "headlab/train/generation.hpp"
#include "headlab/train/token_codec.hpp"
#include "headlab/train/trainer.hpp"

namespace headlab::cli {

namespace {

// The prompt's ids, checked against the model: ValueError naming the flag otherwise.
std::vector<std::int64_t> prompt_of(const GenerateOptions& o, const LoadedModel& m, const TokenCodec& codec) {
  const std::size_t vocab = m.lm->config().tgt_vocab;
  std::vector<std::int64_t> ids;
  if (o.text_prompt) {
    if (!codec.has_text())
      throw ValueError("checkpoint " + quote_clipped(o.checkpoint) + " (task " + task_name(m.options.task) +
                       ") holds no text vocabulary; give --prompt-ids");
    ids = codec.encode(o.prompt);
    for (std::int64_t id : ids)
      if (id < 0 || id >= static_cast<std::int64_t>(vocab))
        throw ValueError("--prompt: the text vocabulary gave id " + std::to_string(id) + ", outside the model's [0, " +
                         std::to_string(vocab) + ")");
    if (ids.empty()) throw ValueError("--prompt: the text gives no tokens; generation needs at least one");
  } else {
    ids = parse_token_ids(o.prompt_ids, vocab, "--prompt-ids");
    if (ids.empty())
      throw ValueError("--prompt-ids: give at least one token id (induction sequences start with <s> = 1)");
  }
  return ids;
}

}  // namespace

int run_generate(const GenerateOptions& o) {
  if (o.temperature == 0 && (o.top_k != 0 || o.top_p != 1)) {  // greedy decoding takes the argmax: they would do nothing
    const char* flags = o.top_k != 0 && o.top_p != 1 ? "--top-k and --top-p have" : o.top_k != 0 ? "--top-k has" : "--top-p has";
    std::cerr << "headlab generate: " << flags << " no effect with --temperature 0 (greedy: the most probable token); give a temperature above 0, "
                 "or leave it out\n";
    return 2;
  }
  const LoadedModel m = load_trained_model(o.checkpoint);
  if (!m.lm) {
    std::cerr << "headlab generate: " << quote_clipped(o.checkpoint) << " is a '" << task_name(m.options.task)
              << "' checkpoint (an encoder-decoder); generate is for decoder-only checkpoints; use decode or translate\n";
    return 2;
  }
  const TokenCodec codec = token_codec(m);
  SamplingOptions sampling;
  sampling.temperature = o.temperature;
  sampling.top_k = o.top_k;
  sampling.top_p = o.top_p;
  std::vector<std::int64_t> prompt;
  try {
    sampling.validate();
    prompt = prompt_of(o, m, codec);
  } catch (const ValueError& e) {
    std::cerr << "headlab generate: " << e.what() << "\n";
    return 2;
  }
  const std::size_t max_len = m.lm->config().max_len;
  if (prompt.size() > max_len)
    std::cerr << "headlab generate: the prompt has " << prompt.size() << " tokens; the model sees the last " << max_len
              << "\n";

  // The prompt, then each token as soon as it is drawn (flushed: a reader sees it at once).
  for (std::size_t i = 0; i < prompt.size(); ++i) std::cout << (i ? codec.separator : "") << codec.decode(prompt[i]);
  std::cout << std::flush;
  Generator gen(o.seed);
  // A model trained with --bos-windows read <s> first in every window: so does its generation.
  const bool bos = m.options.bos_windows;
  if (bos) prompt.insert(prompt.begin(), LmVocabulary::bos);
  generate(*m.lm, prompt, o.max_new_tokens, sampling, gen, [&](const GeneratedToken& t) {
    std::cout << codec.separator << codec.decode(t.id) << std::flush;
    return static_cast<bool>(std::cout);
  }, ContextPath::kv_cache, bos);
  std::cout << "\n";
  return std::cout ? 0 : 1;
}

}  // namespace headlab::cli
