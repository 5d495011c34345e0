#pragma once
// Output lines labelled by where they came from ("[lr=0.1] ", "[rank 1] "): every whole line of a
// stream of chunks starts with the prefix; a partial last line waits for the next chunk, or finish().

#include <string>
#include <string_view>

namespace tandem {

class LinePrefix {
public:
    explicit LinePrefix(std::string prefix) : m_prefix(std::move(prefix)) {}
    // The whole lines `chunk` completes, each prefixed (empty when it completes none).
    std::string feed(std::string_view chunk);
    // The partial last line with its prefix and a newline, once; then empty.
    std::string finish();

private:
    std::string m_prefix, m_partial;
};

} // namespace tandem
