// dyllm: the command line (generate, bench, eval, trace, report, tokenize, make-model). Each subcommand lives in
// cmd_*.cpp.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <map>
#include <new>

#include "app/cli/command.h"
#include "engine/errors.h"
#include "engine/interrupt.h"
#include "engine/version.h"

namespace dyllm::cli {
std::vector<Command>& command_registry() {
    static std::vector<Command> registry;
    return registry;
}
}  // namespace dyllm::cli

int main(int argc, char** argv) {
    // SIGINT/SIGTERM: runs and writers unwind (removing their temporary files), "interrupted", exit 130/143.
    dyllm::install_signal_handlers(true);
    CLI::App app{
        "dyllm: masked diffusion LM engine with DyLLM acceleration (generate, bench, eval, trace, report, "
        "tokenize)"};
    app.set_version_flag("--version", std::string("dyllm ") + dyllm::version());
    app.require_subcommand(1);
    // One line per error (CLI11's default adds a second "Run with --help" line).
    app.failure_message([](const CLI::App*, const CLI::Error& e) { return std::string("error: ") + e.what() + "\n"; });
    std::map<CLI::App*, std::function<int()>> runners;
    for (auto& cmd : dyllm::cli::command_registry()) {
        CLI::App* sub = app.add_subcommand(cmd.name);
        runners[sub]  = cmd.setup(*sub);
    }
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e);
    }
    for (auto& [sub, run] : runners) {
        if (!sub->parsed()) continue;
        try {
            const int rc = run();
            // An interrupt no run noticed (it came during the last write, or a command without runs): the output was
            // not committed (engine/io/atomic_file.h), so the exit says so.
            if (const int sig = dyllm::interrupt_signal()) throw dyllm::Interrupted(sig);
            return rc;
        } catch (const dyllm::Interrupted& e) {
            std::fprintf(stderr, "interrupted\n");
            return e.exit_code();
        } catch (const std::bad_alloc&) {
            std::fprintf(stderr, "error: out of memory while running `dyllm %s`\n", sub->get_name().c_str());
            return 3;
        } catch (const dyllm::LoadError& e) {
            std::fprintf(stderr, "error: %s\n", e.what());
            return 2;
        } catch (const dyllm::InputError& e) {
            std::fprintf(stderr, "error: %s\n", e.what());
            return 2;
        } catch (const dyllm::BackendError& e) {
            std::fprintf(stderr, "error: backend: %s\n", e.what());
            return 3;
        } catch (const std::exception& e) {
            std::fprintf(stderr, "error: %s\n", e.what());
            return 1;
        }
    }
    return 1;
}
