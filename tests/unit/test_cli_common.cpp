// Unit tests of the CLI's shared option handling: flag parsing through CLI11, conversion to DiffusionParams with one
// clear InputError per bad value, id lists, prompt files, and the progress line format.
// The CLI sources are compiled into the `dyllm` executable, not a library, so this test compiles the two
// model-independent files it exercises into its own translation unit.
#include <CLI/CLI.hpp>
#include <catch2/catch.hpp>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "app/cli/cli_common.cpp"  // NOLINT: see the header comment
#include "app/cli/progress.cpp"    // NOLINT
#include "engine/errors.h"

using namespace dyllm;
using namespace dyllm::cli;

namespace {

// Parses `args` as the options of one subcommand-like App holding the model, diffusion and prompt flags.
struct Parsed {
    ModelOptions     model;
    DiffusionOptions diff;
    PromptOptions    prompt;
};

Parsed parse(std::vector<std::string> args) {
    Parsed   p;
    CLI::App app{"test"};
    add_model_options(app, p.model);
    add_diffusion_options(app, p.diff);
    add_prompt_options(app, p.prompt);
    std::reverse(args.begin(), args.end());  // CLI11 parses a reversed vector
    app.parse(args);
    return p;
}

std::string input_error(const std::vector<std::string>& args) {
    try {
        (void)to_diffusion_params(parse(args).diff);
    } catch (const InputError& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("defaults resolve steps = gen length and block = min(32, gen)", "[cli]") {
    DiffusionParams p = to_diffusion_params(parse({}).diff);
    CHECK(p.gen_length == 64);
    CHECK(p.steps == 64);
    CHECK(p.block_length == 32);
    CHECK(p.method == Method::DyLLM);
    CHECK(std::isnan(p.tau));
    CHECK(std::isnan(p.conf_threshold));
    CHECK(p.full_steps == 4);
    CHECK(p.approx);

    p = to_diffusion_params(parse({"-n", "16"}).diff);
    CHECK(p.steps == 16);
    CHECK(p.block_length == 16);
}

TEST_CASE("every flag reaches DiffusionParams, llama.cpp aliases included", "[cli]") {
    const Parsed          p = parse({"-n",
                                     "32",
                                     "--diffusion-steps",
                                     "16",
                                     "--diffusion-block-length",
                                     "8",
                                     "--method",
                                     "original",
                                     "--dyllm-tau",
                                     "0.95",
                                     "--full-steps",
                                     "2",
                                     "--fullq-every",
                                     "3",
                                     "--no-approx",
                                     "--threshold",
                                     "0.9",
                                     "--temp",
                                     "0.5",
                                     "-s",
                                     "42",
                                     "--ignore-eos",
                                     "--kp",
                                     "10",
                                     "--kr",
                                     "3",
                                     "--rho",
                                     "0.5",
                                     "--measure-cosine",
                                     "-m",
                                     "somewhere",
                                     "--backend",
                                     "cpu",
                                     "-t",
                                     "2",
                                     "-p",
                                     "first",
                                     "-p",
                                     "second",
                                     "--prompt-ids",
                                     "1,2",
                                     "--no-chat"});
    const DiffusionParams d = to_diffusion_params(p.diff);
    CHECK(d.gen_length == 32);
    CHECK(d.steps == 16);
    CHECK(d.block_length == 8);
    CHECK(d.method == Method::Original);
    CHECK(d.tau == Approx(0.95f));
    CHECK(d.full_steps == 2);
    CHECK(d.fullq_every == 3);
    CHECK_FALSE(d.approx);
    CHECK(d.conf_threshold == Approx(0.9f));
    CHECK(d.temperature == Approx(0.5f));
    CHECK(d.seed == 42);
    CHECK(d.ignore_eos);
    CHECK(d.kp == 10);
    CHECK(d.kr == 3);
    CHECK(d.rho == Approx(0.5f));
    CHECK(d.measure_cosine);
    CHECK(p.model.model == "somewhere");
    CHECK(parse_backend(p.model.backend) == BackendKind::Cpu);
    CHECK(p.model.threads == 2);
    REQUIRE(p.prompt.prompts.size() == 2);  // -p repeats, one value each
    CHECK(p.prompt.prompts[1] == "second");
    CHECK(p.prompt.prompt_ids == std::vector<std::string>{"1,2"});
    CHECK(p.prompt.no_chat);
}

TEST_CASE("bad diffusion values give one InputError naming the flag and the value", "[cli]") {
    struct Case {
        std::vector<std::string> args;
        std::string              needle;
    };
    const std::vector<Case> cases = {
        {{"--tau", "nan"}, "--tau must be a finite number (got nan)"},
        {{"--tau", "inf"}, "--tau must be a finite number"},
        {{"--tau", "2.5"}, "--tau must be in [-1, 2]"},
        {{"-n", "0"}, "--gen-length must be at least 1 (got 0)"},
        {{"-n", "-8"}, "--gen-length must be at least 1"},
        {{"-n", "16", "--steps", "7"}, "--steps 7 does not divide --gen-length 16"},
        {{"-n", "16", "--steps", "0"}, "--steps must be at least 1"},
        {{"-n", "16", "--steps", "32"}, "--steps 32 exceeds --gen-length 16"},
        {{"-n", "16", "--block-length", "5"}, "--block-length 5 does not divide --gen-length 16"},
        {{"-n", "16", "--block-length", "0"}, "--block-length must be at least 1"},
        {{"-n", "16", "--steps", "2", "--block-length", "4"}, "not a multiple of n_u = 8"},
        {{"--method", "turbo"}, "--method: unknown method 'turbo'"},
        {{"--full-steps", "0"}, "--full-steps must be at least 1"},
        {{"--fullq-every", "0"}, "--fullq-every must be at least 1"},
        {{"--threshold", "nan"}, "--threshold must be a finite number"},
        {{"--temp", "-1"}, "--temp must be a finite number >= 0"},
        {{"--kp", "0"}, "--kp must be at least 1"},
        {{"--kr", "0"}, "--kr must be at least 1"},
        {{"--rho", "2"}, "--rho must be in [0, 1]"},
    };
    for (const Case& c : cases) {
        INFO(c.needle);
        const std::string msg = input_error(c.args);
        CHECK(msg.find(c.needle) != std::string::npos);
        CHECK(msg.find('\n') == std::string::npos);  // one line
    }
    // The valid neighbours of those cases pass.
    CHECK(input_error({"-n", "16", "--steps", "8", "--block-length", "4"}).empty());
    CHECK(input_error({"--tau", "-1"}).empty());
    CHECK(input_error({"--tau", "1"}).empty());
    CHECK(input_error({"--tau", "2"}).empty());  // above 1: every row salient (engine/params.h)
    CHECK(input_error({"--rho", "0"}).empty());
}

TEST_CASE("backend names and strict number parsing", "[cli]") {
    CHECK(parse_backend("auto") == BackendKind::Auto);
    CHECK(parse_backend("cuda") == BackendKind::Cuda);
    CHECK_THROWS_WITH(parse_backend("gpu"), Catch::Contains("--backend must be cpu, cuda or auto (got 'gpu')"));
    CHECK(parse_double_arg("--tau", " 0.99 ") == Approx(0.99));
    CHECK_THROWS_WITH(parse_double_arg("--tau", "0.9x"), Catch::Contains("'0.9x' is not a number"));
    CHECK(parse_int_arg("--steps", "64") == 64);
    CHECK_THROWS_WITH(parse_int_arg("--steps", "6.4"), Catch::Contains("not an integer"));
    CHECK(split_list("--methods", "original, dyllm") == std::vector<std::string>{"original", "dyllm"});
    CHECK_THROWS_WITH(split_list("--methods", "a,,b"), Catch::Contains("empty item at index 1"));
    CHECK_THROWS_WITH(split_list("--methods", "a,"), Catch::Contains("trailing ','"));
}

TEST_CASE("prompt id lists", "[cli]") {
    CHECK(parse_id_list("1, 2,3") == std::vector<int32_t>{1, 2, 3});
    CHECK_THROWS_WITH(parse_id_list("1,x,3"), Catch::Contains("item 1 ('x')"));
    CHECK_THROWS_WITH(parse_id_list("1,-2"), Catch::Contains("item 1 ('-2')"));
    CHECK_THROWS_WITH(parse_id_list("1,2,"), Catch::Contains("trailing ','"));
    CHECK_THROWS_WITH(parse_id_list(""), Catch::Contains("empty id list"));
    CHECK_THROWS_WITH(parse_id_list("99999999999"), Catch::Contains("not a non-negative token id"));
}

TEST_CASE("prompt file: one prompt per line, empty lines skipped", "[cli]") {
    const auto dir = std::filesystem::temp_directory_path() / ("dyllm_test_cli_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    const auto file = dir / "prompts.txt";
    {
        std::ofstream f(file, std::ios::binary);
        f << "first prompt\r\n\n   \nsecond prompt\n";
    }
    PromptOptions o;
    o.prompts     = {"from -p"};
    o.file        = file.string();
    o.prompt_ids  = {"5,6"};
    const auto ps = read_prompt_texts(o);
    REQUIRE(ps.size() == 4);
    CHECK(ps[0].text == "from -p");
    CHECK(ps[1].text == "first prompt");  // CR stripped
    CHECK(ps[2].text == "second prompt");
    CHECK(ps[3].from_ids);
    CHECK(ps[3].ids == std::vector<int32_t>{5, 6});

    {
        std::ofstream f(dir / "empty.txt");
        f << "\n\n";
    }
    PromptOptions e;
    e.file = (dir / "empty.txt").string();
    CHECK_THROWS_WITH(read_prompt_texts(e), Catch::Contains("no prompts"));
    PromptOptions missing;
    missing.file = (dir / "nope.txt").string();
    CHECK_THROWS_WITH(read_prompt_texts(missing), Catch::Contains("nope.txt: cannot open"));
    CHECK_THROWS_WITH(read_prompt_texts(PromptOptions{}), Catch::Contains("no prompt: give -p"));
    std::filesystem::remove_all(dir);
}

TEST_CASE("a missing model directory is one clear LoadError", "[cli]") {
    ModelOptions o;
    o.model   = "/nonexistent/dyllm-model-dir";
    o.backend = "cpu";
    CHECK_THROWS_WITH(load_model_for_cli(o),
                      Catch::Contains("/nonexistent/dyllm-model-dir") && Catch::Contains("no such directory"));
    o.backend = "tpu";
    CHECK_THROWS_AS(load_model_for_cli(o), InputError);
}

TEST_CASE("progress line format", "[cli]") {
    CHECK(format_progress(0, 4, 8) == "diffusion step: 0/4 [        ] 0%");
    CHECK(format_progress(1, 4, 8) == "diffusion step: 1/4 [==      ] 25%");
    CHECK(format_progress(4, 4, 8) == "diffusion step: 4/4 [========] 100%");
    CHECK(format_progress(9, 4, 8) == "diffusion step: 4/4 [========] 100%");  // clamped
    CHECK(format_progress(3, 64).size() == std::string("diffusion step: 3/64 [] 4%").size() + 30);
}

TEST_CASE("float_for_json gives the shortest decimal that reads back to the float", "[cli]") {
    CHECK(float_for_json(0.99f) == 0.99);
    CHECK(float_for_json(0.995f) == 0.995);
    CHECK(float_for_json(0.25f) == 0.25);
    for (float v : {0.1f, 1.0f / 3.0f, 123456.789f, 1e-20f, -7.5e7f}) CHECK(static_cast<float>(float_for_json(v)) == v);
    CHECK(std::isnan(float_for_json(NAN)));
}

TEST_CASE("a scalar flag given twice keeps the last value; -p accumulates", "[cli]") {
    const Parsed          p = parse({"-n", "8", "-n", "16", "--tau", "0.5", "--tau", "0.9", "-p", "a", "-p", "b"});
    const DiffusionParams d = to_diffusion_params(p.diff);
    CHECK(d.gen_length == 16);
    CHECK(d.tau == Approx(0.9f));
    CHECK(p.prompt.prompts.size() == 2);
}

TEST_CASE("progress line label", "[cli]") {
    CHECK(format_progress(2, 4, 4, "loading weights") == "loading weights: 2/4 [==  ] 50%");
}
