// UTF-8 helpers and the GPT-2 byte <-> unicode table used by byte-level BPE.
#include <catch2/catch.hpp>

#include <set>

#include "engine/tokenizer/byte_unicode.h"
#include "engine/tokenizer/utf8.h"

using namespace dyllm;

TEST_CASE("GPT-2 byte table: bijective, printable bytes map to themselves, the rest to U+0100..", "[tokenizer][utf8]") {
    const auto&        t = byte_to_unicode_table();
    std::set<char32_t> seen(t.begin(), t.end());
    CHECK(seen.size() == 256);
    CHECK(t['A'] == U'A');
    CHECK(t['~'] == U'~');
    CHECK(t[0xE9] == 0xE9);   // 'é' is printable Latin-1
    CHECK(t[0] == 0x100);     // first non-printable byte -> U+0100
    CHECK(t[' '] == 0x120);   // 'Ġ' (as in GPT-2/Qwen/Llama-3 vocabularies)
    CHECK(t['\n'] == 0x10A);  // 'Ċ'
    CHECK(t[0xAD] == 0x143);  // soft hyphen is the last non-printable: 'Ń'
    for (int b = 0; b < 256; ++b) CHECK(unicode_to_byte(t[b]) == b);
    CHECK(unicode_to_byte(U'Ġ' + 200) == -1);
    CHECK(bytes_to_unicode_string("hi there\n") == "hi\xC4\xA0there\xC4\x8A");
    std::string back;
    CHECK(unicode_string_to_bytes("hi\xC4\xA0there", back));
    CHECK(back == "hi there");
    std::string keep = "x";
    CHECK_FALSE(unicode_string_to_bytes("\xE6\x97\xA5", keep));  // '日' is not a table code point
    CHECK(keep == "x");
}

TEST_CASE("utf8_sanitize replaces each maximal ill-formed subpart by one U+FFFD", "[tokenizer][utf8]") {
    // Unicode 15 ch. 3.9, table 3-8 example: 61 F1 80 80 E1 80 C2 62 80 63 80 BF 64.
    CHECK(utf8_sanitize("\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64") ==
          "a\uFFFD\uFFFD\uFFFDb\uFFFDc\uFFFD\uFFFDd");
    CHECK(utf8_sanitize("\xED\xA0\x80") == "\uFFFD\uFFFD\uFFFD");            // surrogate: E D excludes A0..BF
    CHECK(utf8_sanitize("\xC0\xAF") == "\uFFFD\uFFFD");                      // overlong
    CHECK(utf8_sanitize("\xF4\x90\x80\x80") == "\uFFFD\uFFFD\uFFFD\uFFFD");  // above U+10FFFF
    CHECK(utf8_sanitize("ok \xF0\x9F\x98\x80") == "ok \xF0\x9F\x98\x80");
    CHECK(utf8_sanitize("\xF0\x9F\x98") == "\uFFFD");  // truncated 4-byte sequence
    CHECK(utf8_valid("日本語 \xF0\x9F\x87\xAB\xF0\x9F\x87\xB7"));
    CHECK_FALSE(utf8_valid("\xFF"));
    CHECK(utf8_length("a日\xF0\x9F\x98\x80\xFF") == 4);
    std::string s;
    utf8_append(s, 0x1F600);
    utf8_append(s, 0xD800);  // surrogate -> U+FFFD
    CHECK(s == "\xF0\x9F\x98\x80\uFFFD");
}
