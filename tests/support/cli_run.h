// Runs a command-line binary of the project (dyllm) through /bin/sh with quoted arguments, capturing stdout, stderr
// and the exit status: the one harness of the CLI tests.
#pragma once
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/support/text_file.h"

namespace dyllm::test {

struct CliRun {
    int         status = -1;  // exit status; 128 + signal when killed by a signal
    std::string out, err;
};

// stdout and stderr go through out_base + ".out" / ".err" (removed afterwards); stdin is /dev/null.
inline CliRun run_command(const std::string& exe, const std::vector<std::string>& args,
                          const std::filesystem::path& out_base) {
    const std::string out = out_base.string() + ".out", err = out_base.string() + ".err";
    std::string       cmd = sh_quote(exe);
    for (const auto& a : args) cmd += " " + sh_quote(a);
    cmd += " > " + sh_quote(out) + " 2> " + sh_quote(err) + " < /dev/null";
    const int rc = std::system(cmd.c_str());
    CliRun    r;
    if (rc != -1 && WIFEXITED(rc))
        r.status = WEXITSTATUS(rc);
    else if (rc != -1 && WIFSIGNALED(rc))
        r.status = 128 + WTERMSIG(rc);
    r.out = slurp(out);
    r.err = slurp(err);
    std::filesystem::remove(out);
    std::filesystem::remove(err);
    return r;
}

}  // namespace dyllm::test
