/*
 * ecma_regex.cc - std::regex behind a C interface (ecma_regex.h): the one C++
 * file of libwpack, so that --tensor-type reads its regexes with the engine
 * llama-quantize reads them with.
 */
#include "ecma_regex.h"

#include <cstdio>
#include <new>
#include <regex>

struct wp_ecma_regex {
    std::regex re;
};

static void say(char *err, size_t errlen, const char *msg)
{
    if (err && errlen)
        std::snprintf(err, errlen, "%s", msg);
}

extern "C" wp_ecma_regex *wp_ecma_regex_new(const char *pattern, char *err, size_t errlen)
{
    try {
        return new wp_ecma_regex{std::regex(pattern)};   /* llama-quantize: std::regex pattern(tname) */
    } catch (const std::regex_error &e) {
        say(err, errlen, e.what());
    } catch (const std::bad_alloc &) {
        say(err, errlen, "out of memory");
    } catch (...) {   /* none other seen from libstdc++; said rather than a terminate() */
        say(err, errlen, "std::regex failed");
    }
    return nullptr;
}

extern "C" int wp_ecma_regex_search(const wp_ecma_regex *re, const char *s, char *err, size_t errlen)
{
    try {
        return std::regex_search(s, re->re) ? 1 : 0;
    } catch (const std::regex_error &e) {
        say(err, errlen, e.what());
    } catch (const std::bad_alloc &) {
        say(err, errlen, "out of memory");
    } catch (...) {
        say(err, errlen, "std::regex failed");
    }
    return -1;
}

extern "C" void wp_ecma_regex_free(wp_ecma_regex *re)
{
    delete re;
}
