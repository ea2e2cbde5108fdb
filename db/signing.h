// Signed databases, opt-in. `tiletune db pack --sign KEY` signs every code object it ships with an
// Ed25519 private key (OpenSSL); a runtime given the matching public key (TILETUNE_TRUSTED_KEY)
// loads no code object from any database without a valid signature by that key: the kernel is then
// built from the template source the library itself carries. A signature covers the object's
// bytes (by their SHA-256), its arch and symbol, and the instantiation it was compiled as, which the
// runtime checks against the parameters of the solution that runs it (README, "Trust").
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "db/records.h"

struct evp_pkey_st;  // OpenSSL's EVP_PKEY

namespace tiletune::db {

// An Ed25519 key read from a PEM file (`openssl genpkey -algorithm ed25519`, or write_key_pair).
class Key {
 public:
  // Throw Error naming the file and the cause: unreadable, not PEM, not Ed25519.
  static Key load_private(const std::string& pem_path);
  static Key load_public(const std::string& pem_path);  // a private key file works too
  // The first 16 hex digits of the SHA-256 of the raw public key: names the key in messages.
  const std::string& id() const { return id_; }
  bool can_sign() const { return private_; }
  SignatureRecord sign(const CodeObjectRecord& code) const;
  // "" when `sig` is a valid signature of `code` by this key, else why not.
  std::string check(const CodeObjectRecord& code, const std::optional<SignatureRecord>& sig) const;

 private:
  std::shared_ptr<evp_pkey_st> key_;
  std::string id_;
  bool private_ = false;
};

class Database;

// `db check --trusted-key`: one line per code object of `db` that a runtime trusting `trusted`
// would not load.
std::vector<std::string> verify_signatures(Database& db, const Key& trusted);

// A fresh key pair: the private key readable by its owner only (0600), the public one to hand to
// the runtimes. Refuses to overwrite either file.
void write_key_pair(const std::string& private_path, const std::string& public_path);

}  // namespace tiletune::db
