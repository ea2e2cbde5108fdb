// The one way tiletune starts a program (compilers, measuring workers, compile servers, online
// tunes): fork + execve with an argument vector, never a shell, so that an argument (a temporary
// directory's name, a compiler from the environment) is never parsed again.
#pragma once
#include <sys/types.h>

#include <string>
#include <vector>

namespace tiletune {

struct SpawnOptions {
  // The child's stdin, stdout and stderr; -1 keeps the parent's. No other descriptor of the parent
  // (its database, its driver, other children's pipes) reaches the child.
  int in = -1, out = -1, err = -1;
  // PR_SET_PDEATHSIG: this signal is sent to the child when the thread that spawned it exits, so
  // a killed sweep or host program leaves no compiler or worker behind; 0: none. SIGTERM to a
  // tiletune program (which removes its temporary directories first), SIGKILL to anything else.
  int death_signal = 0;
  // Its own process group (pgid = pid): it and whatever it starts can be killed together.
  bool own_group = false;
  // "NAME=value" entries that replace or add to the parent's environment.
  std::vector<std::string> env;
};

// Starts argv (argv[0] looked up on PATH unless it names a path) and returns its pid. Throws Error
// naming the program and the reason when it cannot be started (not found, not executable, fork):
// that is the environment's failure, never a result of what the child was asked to do.
pid_t spawn_process(const std::vector<std::string>& argv, const SpawnOptions& options = {});

// `name` as execve takes it: a path as given, else the first executable of that name on PATH;
// empty when there is none.
std::string find_program(const std::string& name);

// "killed by SIGSEGV (Segmentation fault)", "exited with status 3".
std::string describe_exit(int status);

// What run_program saw: the exit status (-1 when killed) and stdout and stderr, interleaved.
struct ProgramOutput {
  int status = -1;
  std::string text;
};

// Runs a tool to its end (a compiler, llvm-readelf): no shell between, stdin closed, stdout and
// stderr captured, in its own process group and killed when the calling thread exits (a stopped
// tune leaves no compiler or its children behind); its pid is tracked so that a stop signal kills
// it before temporary directories go. `env`: "NAME=value" entries added to its environment (a
// TMPDIR inside the caller's TempDir). Throws Error naming the program when it cannot be started:
// the environment's failure, never a result of what it was asked to do.
ProgramOutput run_program(const std::vector<std::string>& argv, const std::vector<std::string>& env = {});

}  // namespace tiletune
