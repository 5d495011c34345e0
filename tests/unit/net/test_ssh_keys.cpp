// Fingerprints, base64, passphrase detection and signal names of the SSH transport.

#include <catch2/catch.hpp>

#include "net/ssh_keys.hpp"

using namespace tandem::net;

namespace {

std::string ssh_string(std::string_view s) {
    std::string out;
    auto n = static_cast<std::uint32_t>(s.size());
    for (int shift = 24; shift >= 0; shift -= 8) {
        out += static_cast<char>((n >> shift) & 0xff);
    }
    out += s;
    return out;
}

// An "openssh-key-v1" file with the given cipher (the rest of the body does not matter here).
std::string openssh_key(std::string_view cipher) {
    std::string body = std::string("openssh-key-v1", 14) + '\0' + ssh_string(cipher) + ssh_string("none") +
                       ssh_string("") + std::string("\0\0\0\1", 4);
    std::string b64 = base64_encode(body);
    std::string text = "-----BEGIN OPENSSH PRIVATE KEY-----\n";
    for (std::size_t i = 0; i < b64.size(); i += 70) {
        text += b64.substr(i, 70) + "\n";
    }
    return text + "-----END OPENSSH PRIVATE KEY-----\n";
}

} // namespace

TEST_CASE("base64 round trips, with and without padding") {
    CHECK(base64_encode("") == "");
    CHECK(base64_encode("f") == "Zg==");
    CHECK(base64_encode("fo") == "Zm8=");
    CHECK(base64_encode("foo") == "Zm9v");
    CHECK(base64_encode("fo", false) == "Zm8");
    CHECK(base64_decode("Zm9v\nYmFy") == std::optional<std::string>("foobar"));
    CHECK(base64_decode("Zg==") == std::optional<std::string>("f"));
    CHECK_FALSE(base64_decode("Zm9v!"));
    CHECK_FALSE(base64_decode("Zg==Zg"));
}

TEST_CASE("SHA256 fingerprints print as OpenSSH does") {
    // sha256("tandem"); `ssh-keygen -l` prints unpadded base64 after "SHA256:".
    const unsigned char digest[32] = {0x71, 0x86, 0xb6, 0xe1, 0xe1, 0x38, 0x44, 0x49, 0x95, 0x94, 0xbc,
                                      0x93, 0x5e, 0xe9, 0xf1, 0x09, 0x1d, 0x59, 0x09, 0x3b, 0xcb, 0x00,
                                      0xec, 0xa3, 0x1c, 0x3d, 0x56, 0x3c, 0x5b, 0xb8, 0x6f, 0x7d};
    CHECK(sha256_fingerprint(std::string_view(reinterpret_cast<const char*>(digest), 32)) ==
          "SHA256:cYa24eE4REmVlLyTXunxCR1ZCTvLAOyjHD1WPFu4b30");
}

TEST_CASE("key type of a public key blob") {
    CHECK(ssh_key_type(ssh_string("ssh-ed25519") + ssh_string("0123456789abcdef0123456789abcdef")) ==
          "ssh-ed25519");
    CHECK(ssh_key_type("\0\0\0\x40short") == "");
}

TEST_CASE("passphrase-protected private keys are recognised without decrypting") {
    CHECK(looks_like_private_key(openssh_key("none")));
    CHECK_FALSE(private_key_is_encrypted(openssh_key("none")));
    CHECK(private_key_is_encrypted(openssh_key("aes256-ctr")));
    CHECK(private_key_is_encrypted("-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\n"
                                   "DEK-Info: AES-128-CBC,00\n\nAAAA\n-----END RSA PRIVATE KEY-----\n"));
    CHECK(private_key_is_encrypted(
        "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n"));
    CHECK_FALSE(
        private_key_is_encrypted("-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n"));
    CHECK_FALSE(looks_like_private_key("ssh-ed25519 AAAAC3Nza... me@host\n"));
}

TEST_CASE("remote signal names become 128+N exit statuses") {
    CHECK(signal_number("KILL") == 9);
    CHECK(signal_number("TERM") == 15);
    CHECK(signal_number("SIGSEGV") == 11);
    CHECK(signal_number("WINCH") == 0);
}

TEST_CASE("the key type of a private key file, from its public part") {
    auto with_public = [](std::string_view cipher, std::string_view type) {
        std::string pub = ssh_string(type) + ssh_string("key bytes");
        std::string body = std::string("openssh-key-v1", 14) + '\0' + ssh_string(cipher) +
                           ssh_string("none") + ssh_string("") + std::string("\0\0\0\1", 4) + ssh_string(pub);
        return "-----BEGIN OPENSSH PRIVATE KEY-----\n" + base64_encode(body) +
               "\n-----END OPENSSH PRIVATE KEY-----\n";
    };
    CHECK(private_key_type(with_public("none", "ssh-rsa")) == "ssh-rsa");
    CHECK(private_key_type(with_public("aes256-ctr", "ssh-ed25519")) == "ssh-ed25519");
    CHECK(private_key_type("-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n") ==
          "ssh-rsa");
    CHECK(private_key_type(openssh_key("none")).empty()); // no public key in it
    CHECK(private_key_type("not a key").empty());
}
