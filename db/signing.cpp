#include "db/signing.h"

#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "common/error.h"
#include "db/database.h"
#include "db/integrity.h"

namespace tiletune::db {
namespace {

std::string openssl_error() {
  const unsigned long e = ERR_get_error();
  if (!e) return "unknown OpenSSL error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  ERR_clear_error();
  return buf;
}

struct FileCloser {
  void operator()(std::FILE* f) const noexcept { std::fclose(f); }
};

std::shared_ptr<evp_pkey_st> read_pem(const std::string& path, bool want_private) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw Error("key " + path + ": is a directory");
  std::unique_ptr<std::FILE, FileCloser> f(std::fopen(path.c_str(), "r"));
  if (!f) throw Error("cannot read the key " + path);
  EVP_PKEY* k = want_private ? PEM_read_PrivateKey(f.get(), nullptr, nullptr, nullptr)
                             : PEM_read_PUBKEY(f.get(), nullptr, nullptr, nullptr);
  if (!k && !want_private) {  // a private key file holds the public key too
    std::rewind(f.get());
    ERR_clear_error();
    k = PEM_read_PrivateKey(f.get(), nullptr, nullptr, nullptr);
  }
  if (!k)
    throw Error("key " + path + ": not a PEM " + (want_private ? "private" : "public") + " key (" + openssl_error() + ")");
  std::shared_ptr<evp_pkey_st> key(k, EVP_PKEY_free);
  if (EVP_PKEY_id(k) != EVP_PKEY_ED25519) throw Error("key " + path + ": not an Ed25519 key (make one with `tiletune db keygen`)");
  return key;
}

std::string public_id(evp_pkey_st* k) {
  unsigned char raw[32];
  std::size_t n = sizeof raw;
  if (EVP_PKEY_get_raw_public_key(k, raw, &n) != 1) throw Error("cannot read an Ed25519 public key: " + openssl_error());
  return sha256_hex(raw, n).substr(0, 16);
}

// What a signature covers, one field per line: everything that decides what runs.
std::string message(const CodeObjectRecord& c) {
  return "tiletune code object 1\narch " + c.arch + "\nsymbol " + c.symbol + "\ncompiled_from " + c.compiled_from +
         "\nsha256 " + sha256_hex(c.bytes) + "\n";
}

}  // namespace

Key Key::load_private(const std::string& path) {
  Key k;
  k.key_ = read_pem(path, true);
  k.id_ = public_id(k.key_.get());
  k.private_ = true;
  return k;
}

Key Key::load_public(const std::string& path) {
  Key k;
  k.key_ = read_pem(path, false);
  k.id_ = public_id(k.key_.get());
  return k;
}

SignatureRecord Key::sign(const CodeObjectRecord& code) const {
  if (!private_) throw Error("key " + id_ + " is a public key: it cannot sign");
  if (code.compiled_from.empty())  // nothing would tie it to the parameters of the solution it runs
    throw Error("code object " + std::to_string(code.id) + " does not record what it was compiled as: it cannot be signed");
  const std::string m = message(code);
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  SignatureRecord s;
  s.code_object_id = code.id;
  s.key_id = id_;
  s.signature.resize(64);
  std::size_t n = s.signature.size();
  if (!ctx || EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, key_.get()) != 1 ||
      EVP_DigestSign(ctx.get(), s.signature.data(), &n, reinterpret_cast<const unsigned char*>(m.data()), m.size()) != 1)
    throw Error("signing code object " + std::to_string(code.id) + " failed: " + openssl_error());
  s.signature.resize(n);
  return s;
}

std::string Key::check(const CodeObjectRecord& code, const std::optional<SignatureRecord>& sig) const {
  if (!sig) return "it is not signed (the runtime trusts only code signed by key " + id_ + ")";
  if (code.compiled_from.empty())
    return "it does not record what it was compiled as (a database from before schema 5), so its signature cannot tie "
           "it to its solution's parameters";
  if (sig->key_id != id_) return "it is signed by key " + sig->key_id + ", not by the trusted key " + id_;
  const std::string m = message(code);
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  const int ok = ctx && EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, key_.get()) == 1
                     ? EVP_DigestVerify(ctx.get(), sig->signature.data(), sig->signature.size(),
                                        reinterpret_cast<const unsigned char*>(m.data()), m.size())
                     : -1;
  ERR_clear_error();
  if (ok != 1) return "its signature by key " + id_ + " does not match what it is (bytes, arch, symbol or instantiation changed)";
  return "";
}

std::vector<std::string> verify_signatures(Database& db, const Key& trusted) {
  std::vector<std::string> faults;
  db.for_each_code_object([&](const CodeObjectRecord& c) {
    if (!c.ok) return;
    if (std::string why = trusted.check(c, db.signature(c.id)); !why.empty())
      faults.push_back("code object " + std::to_string(c.id) + ": " + why);
  });
  return faults;
}

void write_key_pair(const std::string& private_path, const std::string& public_path) {
  std::unique_ptr<EVP_PKEY_CTX, decltype(&EVP_PKEY_CTX_free)> ctx(EVP_PKEY_CTX_new_id(EVP_PKEY_ED25519, nullptr),
                                                                   EVP_PKEY_CTX_free);
  EVP_PKEY* raw = nullptr;
  if (!ctx || EVP_PKEY_keygen_init(ctx.get()) != 1 || EVP_PKEY_keygen(ctx.get(), &raw) != 1)
    throw Error("cannot make an Ed25519 key: " + openssl_error());
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(raw, EVP_PKEY_free);
  auto open_new = [](const std::string& path, mode_t mode) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd < 0) throw Error("cannot create " + path + (errno == EEXIST ? ": it exists already" : ""));
    std::FILE* f = ::fdopen(fd, "w");
    if (!f) {
      ::close(fd);
      throw Error("cannot write " + path);
    }
    return std::unique_ptr<std::FILE, FileCloser>(f);
  };
  {
    auto f = open_new(private_path, 0600);
    if (PEM_write_PrivateKey(f.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr) != 1)
      throw Error("cannot write " + private_path + ": " + openssl_error());
  }
  auto f = open_new(public_path, 0644);
  if (PEM_write_PUBKEY(f.get(), key.get()) != 1) throw Error("cannot write " + public_path + ": " + openssl_error());
}

}  // namespace tiletune::db
