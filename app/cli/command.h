// Subcommand registry of the dyllm CLI: each cmd_<name>.cpp registers itself with a static CommandRegistrar, so
// commands live in their own files and main.cpp stays small.
#pragma once
#include <functional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace dyllm::cli {

struct Command {
    std::string name;
    // Adds the subcommand and its options to `app`; returns the function that runs it (exit code).
    std::function<std::function<int()>(CLI::App& app)> setup;
};

std::vector<Command>& command_registry();

struct CommandRegistrar {
    explicit CommandRegistrar(Command c) { command_registry().push_back(std::move(c)); }
};

}  // namespace dyllm::cli
