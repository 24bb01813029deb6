// The one parameter table (engine/params.h): the defaults are valid, every bound is enforced with a message naming
// the flag, the run's environment and JSON carry every key, and the options of `dyllm` and `dyllm-studio` are
// exactly the table's (in process through add_diffusion_options, and in both executables' --help).
#include <catch2/catch.hpp>

#include <CLI/CLI.hpp>
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>

#include "app/model/param_options.h"
#include "engine/errors.h"
#include "engine/params.h"
#include "support/tiny_models.h"

using namespace dyllm;

namespace {

std::set<std::string> names_of(std::string_view flags) {
    std::set<std::string> out;
    size_t                b = 0;
    while (b < flags.size()) {
        const size_t e = std::min(flags.find(',', b), flags.size());
        out.insert(std::string(flags.substr(b, e - b)));
        b = e + 1;
    }
    return out;
}

std::string help_of(const char* env, const std::string& args) {
    const char* exe = std::getenv(env);
    if (!exe) return {};
    std::string out;
    FILE*       p = popen(("'" + std::string(exe) + "' " + args + " 2>&1").c_str(), "r");
    REQUIRE(p != nullptr);
    char   buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    const int status = pclose(p);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);
    return out;
}

// Is `name` in `text` as a whole option name (not the prefix of a longer one, e.g. -n of --no-chat)?
bool lists(const std::string& text, const std::string& name) {
    auto delim = [](char c) { return c == ' ' || c == ',' || c == '\n' || c == '='; };
    for (size_t at = text.find(name); at != std::string::npos; at = text.find(name, at + 1)) {
        const char before = at > 0 ? text[at - 1] : ' ';
        const char after  = at + name.size() < text.size() ? text[at + name.size()] : ' ';
        if (delim(before) && delim(after)) return true;
    }
    return false;
}

// Every long and short name of every table entry appears in a --help text.
void check_help_lists_table(const std::string& help) {
    for (const ParamSpec& s : diffusion_param_table())
        for (const std::string& name : names_of(s.flags)) {
            INFO(name);
            CHECK(lists(help, name));
        }
}

}  // namespace

TEST_CASE("the defaults are in range and every bound is enforced with the flag's name", "[params]") {
    CHECK_NOTHROW(validate_params(DiffusionParams{}));
    for (const ParamSpec& s : diffusion_param_table()) {
        INFO(s.key);
        CHECK(find_param(s.key) == &s);
        CHECK(s.flag().substr(0, 2) == "--");
        const auto* i = std::get_if<int DiffusionParams::*>(&s.member);
        const auto* f = std::get_if<float DiffusionParams::*>(&s.member);
        if (!i && !f) continue;
        DiffusionParams p;
        // Just below the lower bound (ints) or beyond a finite upper bound (floats) must be refused.
        if (i)
            p.** i = int(s.lo) - 1;
        else if (std::isfinite(s.hi))
            p.** f = float(s.hi) + 0.5f;
        else if (std::isfinite(s.lo))
            p.** f = float(s.lo) - 0.5f;
        else
            continue;
        try {
            validate_params(p);
            FAIL("accepted an out-of-range " << s.key);
        } catch (const InputError& e) {
            CHECK(std::string(e.what()).rfind(std::string(s.flag()), 0) == 0);
        }
    }
    // tau's documented range: -1 and 2 are both accepted, beyond is not.
    DiffusionParams p;
    p.tau = float(kTauMin);
    CHECK_NOTHROW(validate_params(p));
    p.tau = float(kTauMax);
    CHECK_NOTHROW(validate_params(p));
    p.tau = 2.5f;
    CHECK_THROWS_WITH(validate_params(p), Catch::Contains("--tau must be in [-1, 2]"));
    p.tau = NAN;  // unset: the family default
    CHECK_NOTHROW(validate_params(p));
    p.temperature = NAN;  // no "unset" meaning: refused
    CHECK_THROWS_WITH(validate_params(p), Catch::Contains("--temp must be a finite number"));
}

TEST_CASE("add_diffusion_options declares exactly the table's flags", "[params][cli]") {
    CLI::App              app{"t"};
    cli::DiffusionOptions o;
    cli::add_diffusion_options(app, o);
    std::set<std::string> declared;
    for (const CLI::Option* opt : app.get_options()) {
        if (opt->get_name() == "--help") continue;
        for (const auto& n : opt->get_lnames()) declared.insert("--" + n);
        for (const auto& n : opt->get_snames()) declared.insert("-" + n);
    }
    std::set<std::string> expected;
    for (const ParamSpec& s : diffusion_param_table())
        for (const auto& n : names_of(s.flags)) expected.insert(n);
    expected.insert("--no-approx");  // the negations of the boolean settings that default to true
    expected.insert("--no-dream-prompt-row");
    expected.insert("--no-elastic-block-caching");
    CHECK(declared == expected);

    // The sweep commands leave the swept ones out.
    CLI::App              bench{"b"};
    cli::DiffusionOptions b;
    cli::add_diffusion_options(bench, b, cli::DiffusionFlags::FixedOnly);
    CHECK_THROWS(bench.get_option("--tau"));
    CHECK_THROWS(bench.get_option("--steps"));
    CHECK_NOTHROW(bench.get_option("--full-steps"));
}

TEST_CASE("dyllm and dyllm-studio list every table flag in --help", "[params][cli]") {
    const std::string gen = help_of("DYLLM_CLI", "generate --help");
    REQUIRE_FALSE(gen.empty());  // ctest sets DYLLM_CLI
    check_help_lists_table(gen);
    // The studio is optional (no ImGui/GLFW, or a build of the test targets only, as CI's sanitizer pass).
    const char*     studio = std::getenv("DYLLM_STUDIO");
    std::error_code ec;
    if (studio && std::filesystem::exists(studio, ec))
        check_help_lists_table(help_of("DYLLM_STUDIO", "--help"));
    else
        WARN("dyllm-studio not built: its --help is not checked");
}

TEST_CASE("the run's environment and JSON carry every table key", "[params]") {
    auto m = Model::load(test::make_tiny_checkpoint(Family::LLaDA).string());
    struct EnvSink : EventSink {
        std::vector<std::pair<std::string, std::string>> env;
        void                                             on_run_begin(const RunBegin& e) override { env = e.env; }
    } sink;
    Session         s(*m, &sink);
    DiffusionParams p;
    p.gen_length   = 8;
    p.steps        = 8;
    p.block_length = 8;
    s.start({{1, 2, 3}}, p);
    const auto json = cli::params_to_json(p, m->config().family);
    for (const ParamSpec& spec : diffusion_param_table()) {
        INFO(spec.key);
        bool found = false;
        for (const auto& [k, v] : sink.env) found |= k == spec.key;
        CHECK(found);
        CHECK(json.contains(std::string(spec.key)));
    }
}
