#pragma once
// Small pure helpers of the SSH transport: fingerprints as OpenSSH prints them, whether a private key
// file needs a passphrase, what a remote signal name means as an exit status.

#include <optional>
#include <string>
#include <string_view>

namespace tandem::net {

std::string base64_encode(std::string_view bytes, bool pad = true);
// nullopt when `text` is not base64 (whitespace is skipped).
std::optional<std::string> base64_decode(std::string_view text);

// "SHA256:" + unpadded base64 of a 32-byte SHA-256 digest, as `ssh-keygen -l` prints it.
std::string sha256_fingerprint(std::string_view digest);

// The key type name of an SSH public key blob ("ssh-ed25519", "ssh-rsa", ...), empty if malformed.
std::string ssh_key_type(std::string_view blob);

// True when a private key file's text is passphrase-protected (OpenSSH "openssh-key-v1" with a cipher,
// or PEM with "Proc-Type: 4,ENCRYPTED" or "ENCRYPTED PRIVATE KEY"). Never decrypts anything.
bool private_key_is_encrypted(std::string_view text);
// True when the text looks like a private key at all (an OpenSSH or PEM private key block).
bool looks_like_private_key(std::string_view text);

// The key type of a private key file's text ("ssh-rsa", "ssh-ed25519", ...; "ssh-rsa" for a PEM RSA key),
// read from its public part; empty when unknown. Works for passphrase-protected files too.
std::string private_key_type(std::string_view text);

// RFC 4254 signal names ("TERM", "KILL", ...) to Linux numbers; 0 for a name we do not know.
int signal_number(std::string_view name);

} // namespace tandem::net
