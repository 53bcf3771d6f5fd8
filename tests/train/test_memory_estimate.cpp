// The memory estimate of a run from its options (headlab/train/memory_estimate.hpp).
#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <string>

#include "headlab/core/errors.hpp"
#include "headlab/models/transformer.hpp"
#include "headlab/train/memory_estimate.hpp"
#include "headlab/train/options.hpp"
#include "headlab/train/trainer.hpp"
#include "test_support.hpp"

namespace test_memory_estimate {

using namespace headlab;
using headlab::testing::TempDir;

namespace {
double item(const MemoryEstimate& e, const std::string& what) {
  for (const MemoryItem& i : e.items)
    if (i.what == what) return i.bytes;
  FAIL("no item " << what);
  return 0;
}
}  // namespace

TEST_CASE("memory estimate: parameters as the model counts them, Adam twice that, all from the options") {
  for (Task task : {Task::copy, Task::translate, Task::induction}) {
    CAPTURE(task_name(task));
    TrainOptions o = TrainOptions::defaults_for(task);
    const std::size_t V = 50;
    const MemoryEstimate e = estimate_training_memory(o, V, V);
    Generator gen(1);
    double parameters = 0;
    if (task == Task::induction) {
      TransformerConfig c = o.model_config();
      parameters = double(DecoderOnlyLM<float>(c, gen).parameter_count());
    } else {
      const TransformerConfig c = task == Task::translate ? o.model_config(V, V) : o.model_config();
      parameters = double(Transformer<float>(c, gen).parameter_count());
    }
    CHECK(item(e, "parameters") / 4 == doctest::Approx(parameters).epsilon(0.02));
    CHECK(item(e, "gradients") == item(e, "parameters"));
    CHECK(item(e, "Adam moments") == 2 * item(e, "parameters"));
  }
}

TEST_CASE("memory estimate: the attention weights grow as B h T^2, and the tiled kernel keeps none") {
  TrainOptions o = TrainOptions::defaults_for(Task::copy);
  const double base = item(estimate_training_memory(o), "attention weights of one batch");
  o.length *= 2;
  CHECK(item(estimate_training_memory(o), "attention weights of one batch") == doctest::Approx(4 * base));
  o.batch *= 2;
  CHECK(item(estimate_training_memory(o), "attention weights of one batch") == doctest::Approx(8 * base));
  o.tiled_attention = true;
  CHECK(item(estimate_training_memory(o), "attention weights of one batch") == 0);
}

TEST_CASE("memory estimate: --layers 100000 is refused at once, naming the estimate and its largest parts") {
  // Before: --layers 100000 allocated for 16-33 s and ended in a bare std::bad_alloc.
  TrainOptions o = TrainOptions::defaults_for(Task::copy);
  o.layers = 100000;
  o.max_memory = "8G";
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH_AS(check_training_memory(o), doctest::Contains("this run needs about"), OutOfMemory);
  CHECK_THROWS_WITH_AS(check_training_memory(o), doctest::Contains("but 8.0 GB are available"), OutOfMemory);
  CHECK_THROWS_WITH_AS(check_training_memory(o), doctest::Contains("raise --max-memory"), OutOfMemory);
  std::ostringstream log;
  CHECK_THROWS_AS(train(o, log), OutOfMemory);  // the library entry point checks too
  CHECK(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < 2.0);
  // The wide model of the issue: parameters, Adam and the checkpoint save (6 floats each) dominate.
  TrainOptions wide = TrainOptions::defaults_for(Task::copy);
  wide.d_model = 8192;
  wide.ff_dim = 32768;
  wide.layers = 12;
  wide.heads = 8;
  wide.max_memory = "8G";
  CHECK_THROWS_WITH_AS(check_training_memory(wide), doctest::Contains("(checkpoint save and resume "), OutOfMemory);
  CHECK_THROWS_WITH_AS(check_training_memory(wide), doctest::Contains("Adam moments "), OutOfMemory);
  // The defaults fit in well under 1 GB.
  CHECK(estimate_training_memory(TrainOptions::defaults_for(Task::copy)).total() < 1024.0 * 1024 * 1024);
  CHECK_NOTHROW(check_training_memory(TrainOptions::defaults_for(Task::copy)));
}

TEST_CASE("memory estimate: --max-memory sizes") {
  CHECK(parse_memory_size("4G") == 4.0 * (1ull << 30));
  CHECK(parse_memory_size("512M") == 512.0 * (1 << 20));
  CHECK(parse_memory_size("1.5GB") == 1.5 * (1ull << 30));
  CHECK(parse_memory_size("64KiB") == 64.0 * 1024);
  CHECK(parse_memory_size("1000") == 1000);
  for (const char* bad : {"", "G", "4X", "-1G", "nan", "inf", "4 G"}) {
    CAPTURE(bad);
    CHECK_THROWS_AS(parse_memory_size(bad), ValueError);
  }
  for (const char* none : {"0", "0G", "0.0001"}) {  // 0 once turned the check off without a word
    CAPTURE(none);
    CHECK_THROWS_WITH_AS(parse_memory_size(none), doctest::Contains("is no memory to train in"), ValueError);
  }
  TrainOptions o;
  o.max_memory = "lots";
  CHECK_THROWS_WITH_AS(check_training_memory(o), doctest::Contains("max_memory"), OptionError);
  CHECK(memory_text(38.2 * (1ull << 30)) == "38.2 GB");
  CHECK(memory_text(512.0 * (1 << 20)) == "512.0 MB");
  CHECK(available_memory() > 0);
}

TEST_CASE("memory estimate: the room a cgroup leaves (a container, a SLURM job's --mem) is what is available") {
  const double gib = double(1ull << 30);
  TempDir dir("cgroup");
  const std::string meminfo = dir.write("meminfo", "MemTotal:       16777216 kB\nMemAvailable:    8388608 kB\n");
  const std::string root = dir.file("fs");
  const auto put = [&](const std::string& sub, const std::string& name, const std::string& text) {
    std::filesystem::create_directories(root + sub);
    dir.write("fs" + sub + "/" + name, text);
  };
  SUBCASE("no cgroup file: MemAvailable") {
    CHECK(available_memory_at(meminfo, dir.write("self", "0::/job/step\n"), root) == 8 * gib);
  }
  SUBCASE("v2: the job's limit less its usage, a step below it without a limit") {
    put("/job", "memory.max", "2147483648\n");
    put("/job", "memory.current", "536870912\n");
    put("/job/step", "memory.max", "max\n");
    put("/job/step", "memory.current", "1000\n");
    CHECK(available_memory_at(meminfo, dir.write("self", "0::/job/step\n"), root) == 1.5 * gib);
  }
  SUBCASE("v2: a limit above MemAvailable leaves MemAvailable") {
    put("", "memory.max", "34359738368\n");
    CHECK(available_memory_at(meminfo, dir.write("self", "0::/\n"), root) == 8 * gib);
  }
  SUBCASE("v1: the memory controller's hierarchy; its no-limit value is no limit") {
    put("/memory/docker/x", "memory.limit_in_bytes", "9223372036854771712\n");
    put("/memory/docker", "memory.limit_in_bytes", "1073741824\n");
    put("/memory/docker", "memory.usage_in_bytes", "0\n");
    CHECK(available_memory_at(meminfo, dir.write("self", "12:cpu,cpuacct:/docker/x\n5:memory:/docker/x\n"), root) == gib);
  }
  SUBCASE("a full cgroup: 1 byte (known, and nothing fits), never 0 (unknown)") {
    put("/job", "memory.max", "1000\n");
    put("/job", "memory.current", "4000\n");
    CHECK(available_memory_at(meminfo, dir.write("self", "0::/job\n"), root) == 1);
  }
  SUBCASE("a path that climbs out of the mount is not read") {
    put("", "memory.max", "1000\n");
    CHECK(available_memory_at(meminfo, dir.write("self", "0::/../..\n"), root) == 8 * gib);
  }
}

TEST_CASE("memory estimate: latent K/V (MLA) and a sliding window in a decoder-only model") {
  TrainOptions o = TrainOptions::defaults_for(Task::induction);  // rope on: MLA takes a rotary key
  const double plain_activations = item(estimate_training_memory(o, 64, 64), "activations of one batch");
  o.window = 8;
  o.sinks = 2;
  o.latent_dim = 16;
  o.rope_dim = 8;
  o.validate();
  const MemoryEstimate e = estimate_training_memory(o, 64, 64);
  TransformerConfig c = o.model_config();
  Generator gen(1);
  const DecoderOnlyLM<float> lm(c, gen);
  CHECK(lm.config().attention.latent_dim == 16);
  CHECK(item(e, "parameters") / 4 == doctest::Approx(double(lm.parameter_count())).epsilon(0.02));
  // The latent c and the rotary key (d_c + d_R floats per token and layer) are kept beside the rest.
  const double latent_floats = double(o.layers * o.batch * (2 * o.length + 1) * (16 + 8));
  CHECK(item(e, "activations of one batch") == doctest::Approx(plain_activations + 4 * latent_floats));
}

TEST_CASE("memory estimate: the head probe grows as B (sites h T^2 + ...), 3 modules a layer with an encoder") {
  TrainOptions lm = TrainOptions::defaults_for(Task::induction);
  const auto bytes = [](const TrainOptions& o, std::size_t sequences, std::size_t length) {
    return estimate_probe_memory(o, 32, sequences, length).total();
  };
  const double fixed = bytes(lm, 0, 33);  // the model and the runtime
  CHECK(bytes(lm, 2000, 33) - fixed == doctest::Approx(2 * (bytes(lm, 1000, 33) - fixed)));
  // The taps of every attention module: doubling T more than doubles the per-sequence cost.
  CHECK(bytes(lm, 1000, 66) - fixed > 2 * (bytes(lm, 1000, 33) - fixed));
  TrainOptions translate = TrainOptions::defaults_for(Task::translate);
  translate.layers = lm.layers;
  translate.d_model = lm.d_model;
  translate.heads = lm.heads;
  translate.ff_dim = lm.ff_dim;
  const auto taps = [&](const TrainOptions& o) {
    for (const MemoryItem& item : estimate_probe_memory(o, 32, 1000, 33).items)
      if (item.what == "attention taps of the probe") return item.bytes;
    return 0.0;
  };
  CHECK(taps(translate) == doctest::Approx(3 * taps(lm)));  // encoder self, decoder self and cross
  // 100 000 sequences of 33 tokens: gigabytes, refused under a 1 GB limit before anything runs.
  CHECK_THROWS_AS(check_memory(estimate_probe_memory(translate, 32, 100000, 33), 1e9, "heads", "lower it"),
                  OutOfMemory);
}
}  // namespace test_memory_estimate
