// Public-key authentication: the configured identity files, then the keys in ssh-agent, then the
// default keys. Never a prompt: a passphrase-protected file is skipped (its key can come from the agent).
// Errors list which keys were offered (paths and counts only, never key material).

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include <sys/stat.h>

#include "net/ssh_keys.hpp"
#include "net/ssh_session.hpp"

namespace tandem::net {

namespace {

std::optional<std::string> read_small_file(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > 1024 * 1024) {
        return std::nullopt;
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        return std::nullopt;
    }
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

struct Attempt {
    bool rsa_refused = false; // an RSA key was refused: with libssh2 < 1.11 that is SHA-1 signatures
    std::vector<std::string> tried;
    std::vector<std::string> encrypted;
    std::vector<std::string> notes;
};

class Agent {
public:
    explicit Agent(LIBSSH2_SESSION* s) : m_agent(libssh2().agent_init(s)) {}
    ~Agent() {
        if (m_agent) {
            if (m_connected) {
                libssh2().agent_disconnect(m_agent);
            }
            libssh2().agent_free(m_agent);
        }
    }
    Agent(const Agent&) = delete;
    Agent& operator=(const Agent&) = delete;
    LIBSSH2_AGENT* get() const { return m_agent; }
    bool connect(const std::string& socket) {
        libssh2().agent_set_identity_path(m_agent, socket.c_str());
        m_connected = libssh2().agent_connect(m_agent) == 0;
        return m_connected;
    }

private:
    LIBSSH2_AGENT* m_agent;
    bool m_connected = false;
};

} // namespace

Status authenticate(SshSession& session, const SshEndpoint& endpoint,
                    const std::vector<std::string>& default_identities, const SshOptions& options,
                    SshClock::time_point deadline) {
    LIBSSH2_SESSION* s = session.raw();
    const std::string who = "ssh to " + session.name();
    const std::string& user = endpoint.user;
    const auto ulen = static_cast<unsigned int>(user.size());

    int rc = 0;
    char* methods =
        session.retry_ptr<char>([&] { return libssh2().userauth_list(s, user.c_str(), ulen); }, deadline, rc);
    if (!methods) {
        if (libssh2().userauth_authenticated(s)) {
            return {};
        }
        return tl::unexpected(ssh_error(rc, session, who + ": asking which logins the server accepts"));
    }
    if (std::string(methods).find("publickey") == std::string::npos) {
        return fail(ErrorKind::unauthorized,
                    who + ": the server does not accept public keys (it offers: " + methods + ")",
                    "tandem logs in with keys only; ask the administrators to enable PubkeyAuthentication");
    }

    Attempt attempt;
    std::set<std::string> seen;
    // Returns true when authenticated; an error only when the transport breaks.
    auto try_file = [&](const std::string& path, bool required) -> Result<bool> {
        if (!seen.insert(path).second) {
            return false;
        }
        auto text = read_small_file(path);
        if (!text) {
            if (required) {
                attempt.notes.push_back(path + " does not exist or cannot be read");
            }
            return false;
        }
        if (!looks_like_private_key(*text)) {
            attempt.notes.push_back(path + " is not a private key file");
            return false;
        }
        if (private_key_is_encrypted(*text)) {
            attempt.encrypted.push_back(path);
            ssh_debug(options, path + " is passphrase-protected: skipped (add it to ssh-agent)");
            return false;
        }
        attempt.tried.push_back(path);
        int r = session.retry(
            [&] {
                return libssh2().userauth_publickey_fromfile_ex(s, user.c_str(), ulen, nullptr, path.c_str(),
                                                                "");
            },
            deadline);
        if (r == 0) {
            ssh_debug(options, "authenticated as " + user + " with " + path);
            return true;
        }
        if (r == LIBSSH2_ERROR_AUTHENTICATION_FAILED || r == LIBSSH2_ERROR_PUBLICKEY_UNVERIFIED ||
            r == LIBSSH2_ERROR_FILE || r == LIBSSH2_ERROR_METHOD_NOT_SUPPORTED) {
            ssh_debug(options, path + " was not accepted (" + session.last_error() + ")");
            attempt.rsa_refused = attempt.rsa_refused || private_key_type(*text) == "ssh-rsa";
            return false;
        }
        return tl::unexpected(ssh_error(r, session, who + ": logging in with " + path));
    };

    for (const auto& path : endpoint.identity_files) {
        auto ok = try_file(path, true);
        if (!ok) {
            return tl::unexpected(ok.error());
        }
        if (*ok) {
            return {};
        }
    }

    if (const char* sock = std::getenv("SSH_AUTH_SOCK"); sock && *sock) {
        Agent agent(s);
        if (!agent.get() || !agent.connect(sock)) {
            attempt.notes.push_back("ssh-agent at $SSH_AUTH_SOCK did not answer");
        } else if (libssh2().agent_list_identities(agent.get()) != 0) {
            attempt.notes.push_back("ssh-agent did not list its keys");
        } else {
            int offered = 0;
            libssh2_agent_publickey* prev = nullptr;
            libssh2_agent_publickey* id = nullptr;
            while (libssh2().agent_get_identity(agent.get(), &id, prev) == 0) {
                prev = id;
                ++offered;
                int r = session.retry([&] { return libssh2().agent_userauth(agent.get(), user.c_str(), id); },
                                      deadline);
                if (r == 0) {
                    ssh_debug(options, "authenticated as " + user + " with an ssh-agent key (" +
                                           (id->comment ? id->comment : "") + ")");
                    return {};
                }
                attempt.rsa_refused = attempt.rsa_refused ||
                                      ssh_key_type(std::string_view(reinterpret_cast<const char*>(id->blob),
                                                                    id->blob_len)) == "ssh-rsa";
                if (ssh_transport_broken(r) && r != LIBSSH2_ERROR_AUTHENTICATION_FAILED &&
                    r != LIBSSH2_ERROR_PUBLICKEY_UNVERIFIED && r != LIBSSH2_ERROR_AGENT_PROTOCOL) {
                    return tl::unexpected(ssh_error(r, session, who + ": logging in with an ssh-agent key"));
                }
            }
            attempt.tried.push_back("ssh-agent (" + std::to_string(offered) + " keys)");
        }
    }

    for (const auto& path : default_identities) {
        auto ok = try_file(path, false);
        if (!ok) {
            return tl::unexpected(ok.error());
        }
        if (*ok) {
            return {};
        }
    }

    std::string tried;
    for (const auto& t : attempt.tried) {
        tried += (tried.empty() ? "" : ", ") + t;
    }
    std::string message = who + ": no key was accepted (offered: " + (tried.empty() ? "none" : tried) + ")";
    for (const auto& note : attempt.notes) {
        message += "; " + note;
    }
    std::string hint = "add your public key to ~/.ssh/authorized_keys of " + user + " on " + endpoint.host +
                       ", or set ssh.identity_file";
    if (attempt.rsa_refused && !libssh2().version(0x010b00)) {
        // libssh2 before 1.11 signs with ssh-rsa (SHA-1), which OpenSSH 8.8 and later refuse (libssh2#634).
        message += "; RSA keys cannot log in to OpenSSH 8.8+ with libssh2 " +
                   std::string(libssh2().version(0)) + " (SHA-1 signatures)";
        hint = "use an ed25519 or ecdsa key (ssh-keygen -t ed25519) and add its public key to "
               "~/.ssh/authorized_keys on " +
               endpoint.host;
    }
    if (!attempt.encrypted.empty()) {
        message += "; " + attempt.encrypted.front() + " needs a passphrase";
        hint = "tandem never asks for a passphrase: load the key into ssh-agent (ssh-add " +
               attempt.encrypted.front() + ") and keep SSH_AUTH_SOCK set";
    }
    return fail(ErrorKind::unauthorized, message, hint);
}

} // namespace tandem::net
