#include <catch2/catch.hpp>

#include "backends/slurm/script_quoting.hpp"

using namespace tandem::slurm;

TEST_CASE("shell_quote: single quotes, ' as '\\'' and CR spliced in as $'\\r'") {
    CHECK(shell_quote("") == "''");
    CHECK(shell_quote("plain") == "'plain'");
    CHECK(shell_quote("it's") == "'it'\\''s'");
    CHECK(shell_quote("$HOME `id` \"q\" \\") == "'$HOME `id` \"q\" \\'");
    CHECK(shell_quote("a\r\nb") == "'a'$'\\r''\nb'");
    CHECK(shell_quote("a\r\nb").find('\r') == std::string::npos);
}

TEST_CASE("sbatch_value: bare when safe, double-quoted otherwise, refused when no line can carry it") {
    CHECK(sbatch_value("gpu") == "gpu");
    CHECK(sbatch_value("/home/u/.tandem/jobs/%j.out") == "/home/u/.tandem/jobs/%j.out");
    CHECK(sbatch_value("gpu:h100:8") == "gpu:h100:8");
    CHECK(sbatch_value("my job") == "\"my job\"");
    CHECK(sbatch_value("a#b") == "\"a#b\""); // an unquoted # would start a comment
    CHECK(sbatch_value("say \"hi\" \\o/") == "\"say \\\"hi\\\" \\\\o/\"");
    CHECK(sbatch_value("it's") == "\"it's\"");
    CHECK(sbatch_value("") == "\"\"");
    CHECK_FALSE(sbatch_value("two\nlines"));
    CHECK_FALSE(sbatch_value("cr\r"));
    CHECK_FALSE(sbatch_value(std::string_view("nul\0x", 5)));
    CHECK_FALSE(sbatch_value("my-PackJob")); // sbatch blanks "packjob" out of #SBATCH lines
}

TEST_CASE("heredoc_delimiter never occurs in the text") {
    CHECK(heredoc_delimiter("echo hi\n", "EOF") == "EOF");
    CHECK(heredoc_delimiter("cat <<EOF\nx\nEOF\n", "EOF") == "EOF_1");
    CHECK(heredoc_delimiter("EOF EOF_1 EOF_2", "EOF") == "EOF_3");
    CHECK(heredoc_delimiter("xEOFx", "EOF") == "EOF_1");
}

TEST_CASE("shell names") {
    CHECK(is_shell_name("A"));
    CHECK(is_shell_name("_x1"));
    CHECK_FALSE(is_shell_name(""));
    CHECK_FALSE(is_shell_name("1A"));
    CHECK_FALSE(is_shell_name("A-B"));
    CHECK_FALSE(is_shell_name("A;rm"));
    CHECK_FALSE(is_shell_name("A B"));
}
