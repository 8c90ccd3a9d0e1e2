/* cxx_guard.cc - see cxx_guard.h. */
#include "cxx_guard.h"

#include <cxxabi.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <typeinfo>

static wp_uncaught_fn handler;

static void on_terminate()
{
    char what[512] = "an exception that is no std::exception";
    if (std::exception_ptr p = std::current_exception()) {
        try {
            std::rethrow_exception(p);
        } catch (const std::exception &e) {
            int st = -1;
            char *name = abi::__cxa_demangle(typeid(e).name(), nullptr, nullptr, &st);
            std::snprintf(what, sizeof what, "%s: %s", st == 0 && name ? name : typeid(e).name(), e.what());
            std::free(name);
        } catch (...) {
        }
    }
    if (handler)
        handler(what);
    std::abort();
}

extern "C" void wp_on_uncaught(wp_uncaught_fn fn)
{
    handler = fn;
    std::set_terminate(on_terminate);
}
