// Host key verification against OpenSSH known_hosts files (hashed names and [host]:port entries are
// libssh2's knownhost parser; `@revoked` lines are ours). Unknown or changed keys are refused, always:
// tandem never prompts and never adds a key by itself.

#include <fstream>
#include <set>
#include <sstream>
#include <utility>

#include "net/ssh_keys.hpp"
#include "net/ssh_session.hpp"

namespace tandem::net {

namespace {

struct KnownHosts {
    LIBSSH2_KNOWNHOSTS* hosts = nullptr;
    std::set<std::string> revoked; // base64 key blobs
    KnownHosts() = default;
    KnownHosts(const KnownHosts&) = delete;
    KnownHosts& operator=(const KnownHosts&) = delete;
    ~KnownHosts() {
        if (hosts) {
            libssh2().knownhost_free(hosts);
        }
    }
};

void load(KnownHosts& out, SshSession& session, const SshEndpoint& endpoint, const SshOptions& options) {
    out.hosts = libssh2().knownhost_init(session.raw());
    for (const auto& file : endpoint.known_hosts) {
        std::ifstream in(file);
        if (!in) {
            continue;
        }
        int number = 0;
        for (std::string line; std::getline(in, line);) {
            ++number;
            auto start = line.find_first_not_of(" \t");
            if (start == std::string::npos || line[start] == '#') {
                continue;
            }
            line = line.substr(start);
            while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) {
                line.pop_back();
            }
            if (line.starts_with("@")) {
                std::istringstream words(line);
                std::string marker, hosts, type, key;
                words >> marker >> hosts >> type >> key;
                if (marker == "@revoked" && !key.empty()) {
                    out.revoked.insert(key);
                }
                continue; // @cert-authority: host certificates are not supported
            }
            if (libssh2().knownhost_readline(out.hosts, line.c_str(), line.size(),
                                             LIBSSH2_KNOWNHOST_FILE_OPENSSH) != 0) {
                ssh_debug(options,
                          file + ":" + std::to_string(number) + ": skipped (a key type libssh2 cannot read)");
            }
        }
    }
}

struct KeyKind {
    int libssh2_type;
    int knownhost_bit;
    const char* algorithms; // as offered in the key exchange
    const char* keyscan;    // ssh-keyscan -t
};
constexpr KeyKind kinds[] = {
    {LIBSSH2_HOSTKEY_TYPE_ED25519, LIBSSH2_KNOWNHOST_KEY_ED25519, "ssh-ed25519", "ed25519"},
    {LIBSSH2_HOSTKEY_TYPE_ECDSA_256, LIBSSH2_KNOWNHOST_KEY_ECDSA_256, "ecdsa-sha2-nistp256", "ecdsa"},
    {LIBSSH2_HOSTKEY_TYPE_ECDSA_384, LIBSSH2_KNOWNHOST_KEY_ECDSA_384, "ecdsa-sha2-nistp384", "ecdsa"},
    {LIBSSH2_HOSTKEY_TYPE_ECDSA_521, LIBSSH2_KNOWNHOST_KEY_ECDSA_521, "ecdsa-sha2-nistp521", "ecdsa"},
    {LIBSSH2_HOSTKEY_TYPE_RSA, LIBSSH2_KNOWNHOST_KEY_SSHRSA, "rsa-sha2-512,rsa-sha2-256,ssh-rsa", "rsa"},
    {LIBSSH2_HOSTKEY_TYPE_DSS, LIBSSH2_KNOWNHOST_KEY_SSHDSS, "ssh-dss", "dsa"},
};

std::string keyscan_hint(const SshEndpoint& endpoint, const char* type) {
    std::string file = endpoint.known_hosts.empty() ? "~/.ssh/known_hosts" : endpoint.known_hosts.front();
    return "ssh-keyscan " +
           (endpoint.port == 22 ? std::string() : "-p " + std::to_string(endpoint.port) + " ") + "-t " +
           type + " " + endpoint.host + " >> " + file;
}

// The name OpenSSH files the host under: "host" on port 22, "[host]:port" elsewhere. It is checked with
// port -1, because libssh2 given a port also accepts a plain "host" entry (a key trusted for port 22),
// which OpenSSH does not.
std::string known_name(const SshEndpoint& endpoint) {
    return endpoint.port == 22 ? endpoint.host : "[" + endpoint.host + "]:" + std::to_string(endpoint.port);
}

} // namespace

void prefer_known_host_keys(SshSession& session, const SshEndpoint& endpoint, const SshOptions& options) {
    KnownHosts known;
    load(known, session, endpoint, options);
    std::string preferred;
    for (const auto& kind : kinds) {
        // A dummy key against the entries: MISMATCH means an entry of this type exists for the host.
        int rc = libssh2().knownhost_checkp(
            known.hosts, known_name(endpoint).c_str(), -1, "x", 1,
            LIBSSH2_KNOWNHOST_TYPE_PLAIN | LIBSSH2_KNOWNHOST_KEYENC_BASE64 | kind.knownhost_bit, nullptr);
        if (rc == LIBSSH2_KNOWNHOST_CHECK_MISMATCH) {
            preferred += std::string(preferred.empty() ? "" : ",") + kind.algorithms;
        }
    }
    if (preferred.empty()) {
        return;
    }
    const char** algs = nullptr;
    int n = libssh2().session_supported_algs(session.raw(), LIBSSH2_METHOD_HOSTKEY, &algs);
    if (n <= 0) {
        return;
    }
    std::set<std::string> supported;
    for (int i = 0; i < n; ++i) {
        supported.insert(algs[i]);
    }
    libssh2().free(session.raw(), algs);
    std::string pref;
    std::set<std::string> used;
    auto add = [&](const std::string& alg) {
        if (supported.count(alg) && used.insert(alg).second) {
            pref += (pref.empty() ? "" : ",") + alg;
        }
    };
    std::istringstream list(preferred);
    for (std::string alg; std::getline(list, alg, ',');) {
        add(alg);
    }
    for (const auto& alg : supported) {
        add(alg);
    }
    if (!pref.empty()) {
        libssh2().session_method_pref(session.raw(), LIBSSH2_METHOD_HOSTKEY, pref.c_str());
    }
}

Status check_host_key(SshSession& session, const SshEndpoint& endpoint, const SshOptions& options) {
    std::size_t len = 0;
    int type = 0;
    const char* key = libssh2().session_hostkey(session.raw(), &len, &type);
    const char* digest = libssh2().hostkey_hash(session.raw(), LIBSSH2_HOSTKEY_HASH_SHA256);
    const std::string who = "ssh to " + session.name();
    if (!key || !digest) {
        return fail(ErrorKind::unavailable, who + ": the server sent no host key we can read");
    }
    const std::string blob(key, len);
    const std::string fingerprint = sha256_fingerprint(std::string_view(digest, 32));
    const std::string type_name = ssh_key_type(blob);
    const KeyKind* kind = nullptr;
    for (const auto& k : kinds) {
        if (k.libssh2_type == type) {
            kind = &k;
        }
    }
    if (!kind) {
        return fail(ErrorKind::unauthorized, who + ": the server's host key type (" + type_name +
                                                 ") is not one tandem can check; refusing to connect");
    }
    KnownHosts known;
    load(known, session, endpoint, options);
    if (known.revoked.count(base64_encode(blob))) {
        return fail(ErrorKind::unauthorized, who + ": the server's host key " + type_name + " " +
                                                 fingerprint + " is marked @revoked in known_hosts");
    }
    int rc = libssh2().knownhost_checkp(
        known.hosts, known_name(endpoint).c_str(), -1, key, len,
        LIBSSH2_KNOWNHOST_TYPE_PLAIN | LIBSSH2_KNOWNHOST_KEYENC_RAW | kind->knownhost_bit, nullptr);
    std::string files;
    for (const auto& f : endpoint.known_hosts) {
        files += (files.empty() ? "" : ", ") + f;
    }
    switch (rc) {
    case LIBSSH2_KNOWNHOST_CHECK_MATCH:
        ssh_debug(options, "host key of " + known_name(endpoint) + " " + type_name + " " + fingerprint +
                               " matches known_hosts");
        return {};
    case LIBSSH2_KNOWNHOST_CHECK_MISMATCH:
        return fail(ErrorKind::unauthorized,
                    who + ": the host key has CHANGED: the server offers " + type_name + " " + fingerprint +
                        ", but known_hosts (" + files + ") has another key for " + known_name(endpoint) +
                        "; refusing to connect (this can be a man-in-the-middle attack)",
                    "if the host was reinstalled and its administrators confirm " + fingerprint +
                        ": ssh-keygen -R '" + known_name(endpoint) + "' -f " + endpoint.known_hosts.front() +
                        " && " + keyscan_hint(endpoint, kind->keyscan));
    case LIBSSH2_KNOWNHOST_CHECK_NOTFOUND:
        return fail(ErrorKind::unauthorized,
                    who + ": the host " + known_name(endpoint) + " is not in known_hosts (" + files +
                        "); its key is " + type_name + " " + fingerprint + "; refusing to connect",
                    "check " + fingerprint + " with the host's administrators, then trust it: " +
                        keyscan_hint(endpoint, kind->keyscan));
    default:
        return fail(ErrorKind::internal, who + ": checking the host key failed: " + session.last_error());
    }
}

} // namespace tandem::net
