// read_regular_file / parse_json_text / read_json_file / read_jsonl_file: the bounded JSON reader every loader uses.
// stat() before open() and O_NONBLOCK + fstat() after it, so a FIFO or device never blocks or streams forever.
#include "engine/io/json_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "engine/errors.h"

namespace dyllm {

namespace {

using json = nlohmann::json;

// Thrown by the parser callback; caught in parse_json_text (the parser unwinds and frees what it built so far).
struct DepthExceeded {
    int depth;
};

const char* file_type_name(mode_t m) {
    if (S_ISDIR(m)) return "a directory";
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    if (S_ISSOCK(m)) return "a socket";
    return "not a regular file";
}

[[noreturn]] void fail_type(const std::filesystem::path& path, mode_t m, const char* what) {
    if (S_ISDIR(m)) throw LoadError(path.string() + ": is a directory, expected the " + what + " file");
    throw LoadError(path.string() + ": is " + file_type_name(m) + ", not a regular file (expected the " + what +
                    " file)");
}

[[noreturn]] void fail_errno(const std::filesystem::path& path, const char* verb, int err, const char* what) {
    if (err == ENOENT) throw LoadError(path.string() + ": cannot open: no such file (expected the " + what + " file)");
    if (err == ELOOP) throw LoadError(path.string() + ": symlink loop (too many levels of symbolic links)");
    throw LoadError(path.string() + ": cannot " + verb + ": " + std::strerror(err));
}

// The parser's message, one line, at most ~200 characters (nlohmann quotes the last token read, which can be huge).
std::string short_what(const json::exception& e) {
    std::string s = e.what();
    for (char& c : s)
        if (c == '\n' || c == '\r') c = ' ';
    constexpr size_t kMax = 200;
    if (s.size() > kMax) s = s.substr(0, kMax) + "...";
    return s;
}

}  // namespace

std::string read_regular_file(const std::filesystem::path& path, uint64_t max_bytes, const char* what) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) fail_errno(path, "stat", errno, what);
    if (!S_ISREG(st.st_mode)) fail_type(path, st.st_mode, what);  // refused before open(): a FIFO is never opened
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) fail_errno(path, "open", errno, what);
    struct Closer {
        int fd;
        ~Closer() { ::close(fd); }
    } closer{fd};
    if (::fstat(fd, &st) != 0) fail_errno(path, "stat", errno, what);
    if (!S_ISREG(st.st_mode)) fail_type(path, st.st_mode, what);  // replaced between stat() and open()
    auto too_big = [&](uint64_t n) {
        throw LoadError(path.string() + ": " + what + " is " +
                        (n > max_bytes + 1 ? std::to_string(n) : "over " + std::to_string(max_bytes)) +
                        " bytes, more than the " + std::to_string(max_bytes) + "-byte limit for this kind of file");
    };
    if (uint64_t(st.st_size) > max_bytes) too_big(uint64_t(st.st_size));
    std::string out;
    out.resize(size_t(st.st_size));
    size_t got = 0;
    for (;;) {
        if (got == out.size()) {
            if (out.size() > max_bytes) too_big(out.size());  // the file grew while being read
            out.resize(out.size() + 4096);
        }
        const ssize_t n = ::read(fd, out.data() + got, out.size() - got);
        if (n < 0) {
            if (errno == EINTR) continue;
            fail_errno(path, "read", errno, what);
        }
        if (n == 0) break;
        got += size_t(n);
    }
    out.resize(got);
    return out;
}

json parse_json_text(std::string_view text, const std::string& label, const JsonTopKeyFn& on_top_key, int max_depth) {
    // The parser treats NUL as the end of input through iterators of char: garbage (or 200 MB of zeros) after a NUL
    // would load without complaint. No JSON text holds a raw NUL (inside strings it must be escaped as \u0000).
    if (const size_t nul = text.find('\0'); nul != std::string_view::npos)
        throw LoadError(label + ": NUL byte at offset " + std::to_string(nul) + " (not JSON text)");
    json::parser_callback_t cb = [&](int depth, json::parse_event_t ev, json& parsed) {
        // depth is the number of containers open around this event; a container's start counts the one it opens.
        if ((ev == json::parse_event_t::object_start || ev == json::parse_event_t::array_start) && depth >= max_depth)
            throw DepthExceeded{depth + 1};
        if (ev == json::parse_event_t::key && depth == 1 && on_top_key)
            on_top_key(parsed.get_ref<const std::string&>());
        return true;
    };
    try {
        return json::parse(text.begin(), text.end(), cb);
    } catch (const DepthExceeded& d) {
        throw LoadError(label + ": JSON nested deeper than " + std::to_string(max_depth) + " levels (not a file this " +
                        "loader reads; corrupt?)");
    } catch (const json::parse_error& e) {
        throw LoadError(label + ": not valid JSON at byte " + std::to_string(e.byte) + ": " + short_what(e));
    } catch (const json::out_of_range& e) {
        throw LoadError(label + ": number out of range: " + short_what(e));
    } catch (const json::exception& e) {
        throw LoadError(label + ": cannot parse JSON: " + short_what(e));
    }
}

json read_json_file(const std::filesystem::path& path, uint64_t max_bytes, const char* what) {
    const std::string text = read_regular_file(path, max_bytes, what);
    return parse_json_text(text, path.string());
}

void read_jsonl_file(const std::filesystem::path& path, uint64_t max_bytes, const char* what,
                     const std::function<void(size_t, const json&)>& fn) {
    const std::string text = read_regular_file(path, max_bytes, what);
    size_t            line = 0;
    for (size_t b = 0; b < text.size();) {
        size_t e = text.find('\n', b);
        if (e == std::string::npos) e = text.size();
        ++line;
        std::string_view s(text.data() + b, e - b);
        b = e + 1;
        if (!s.empty() && s.back() == '\r') s.remove_suffix(1);
        if (s.find_first_not_of(" \t\v\f\r") == std::string_view::npos) continue;
        const std::string at = path.string() + ":" + std::to_string(line);
        const json        j  = parse_json_text(s, at);
        fn(line, j);
    }
}

std::string json_excerpt(const json& v, size_t max_chars) {
    if (v.is_array() || v.is_object()) {
        // A short flat container (["Qwen2ForCausalLM"], {"type": "yarn", "factor": 4.0}) is shown inline, one level
        // only, each element excerpted; anything nested or longer by its type and size.
        bool flat = v.size() <= 8;
        for (auto it = v.begin(); flat && it != v.end(); ++it) flat = it->is_primitive();
        if (!flat) {
            return v.is_array() ? "an array of " + std::to_string(v.size()) + " elements"
                                : "an object of " + std::to_string(v.size()) + " keys";
        }
        std::string s = v.is_array() ? "[" : "{";
        for (auto it = v.begin(); it != v.end(); ++it) {
            if (it != v.begin()) s += ", ";
            if (v.is_object()) {
                const json key(text_excerpt(it.key(), max_chars));
                s += key.dump(-1, ' ', false, json::error_handler_t::replace) + ": ";
            }
            s += json_excerpt(*it, max_chars);
        }
        return s + (v.is_array() ? "]" : "}");
    }
    // Scalars dump without recursion; strings are cut first, then escaped onto one line by dump() (a cut inside a
    // UTF-8 sequence becomes U+FFFD through the replace handler).
    if (v.is_string()) {
        const std::string& str = v.get_ref<const std::string&>();
        if (str.size() > max_chars)
            return json(str.substr(0, max_chars)).dump(-1, ' ', false, json::error_handler_t::replace) + "...";
    }
    std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
    if (s.size() > max_chars) s = s.substr(0, max_chars) + "...";
    return s;
}

std::string text_excerpt(std::string_view s, size_t max_chars) {
    if (s.size() <= max_chars) return std::string(s);
    return std::string(s.substr(0, max_chars)) + "...";
}

}  // namespace dyllm
