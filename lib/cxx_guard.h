/*
 * cxx_guard.h - a C++ exception that no C++ frame catches, said in one line.
 *
 * libllama is C++ behind a C interface, and a few of its faults are thrown
 * rather than returned: a model whose vocabulary lacks a byte token throws
 * std::out_of_range from llama_vocab::byte_to_token through
 * llama_model_load_from_file. Through wpack's C frames nothing catches it,
 * std::terminate runs, and ggml's terminate handler (ggml.cpp) prints a
 * gdb backtrace to standard output, where a report or a redirected output
 * goes, then aborts (exit status 134). This replaces that handler.
 */
#ifndef WPACK_CXX_GUARD_H
#define WPACK_CXX_GUARD_H

#ifdef __cplusplus
extern "C" {
#endif

/* Called with what an uncaught exception says, "std::out_of_range:
 * _Map_base::at" (its demangled type and what(); "an exception that is no
 * std::exception" else), on the thread that threw. It must not return: a
 * return aborts. */
typedef void (*wp_uncaught_fn)(const char *what);

/* Make fn the handler of every exception no C++ frame catches
 * (std::set_terminate), from now on: call it after the libraries that set
 * their own (libggml, at load) are loaded. Never fails. */
void wp_on_uncaught(wp_uncaught_fn fn);

#ifdef __cplusplus
}
#endif
#endif
