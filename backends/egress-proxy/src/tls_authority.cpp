// The proxy's per-sandbox certificate authority (tls_authority.hpp).
#include "tls_authority.hpp"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include <stdexcept>

#include "pinned_names.hpp"

namespace maf::sandbox::egress_proxy {
namespace {

[[noreturn]] void fail(const std::string& what) { throw std::runtime_error("TLS authority: " + what); }

KeyPtr new_key() {
  KeyPtr key(EVP_EC_gen("P-256"));
  if (!key) fail("could not generate a P-256 key");
  return key;
}

void add_ext(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  if (!ext) fail("could not make extension " + std::string(OBJ_nid2sn(nid)) + "=" + value);
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

X509Ptr new_cert(EVP_PKEY* subject_key, const std::string& common_name, std::chrono::seconds lifetime) {
  X509Ptr cert(X509_new());
  if (!cert) fail("X509_new");
  X509_set_version(cert.get(), 2);
  unsigned char serial[16];
  if (RAND_bytes(serial, sizeof serial) != 1) fail("RAND_bytes");
  serial[0] &= 0x7f;  // positive
  BIGNUM* bn = BN_bin2bn(serial, sizeof serial, nullptr);
  BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert.get()));
  BN_free(bn);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -300);  // a guest clock a little behind
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), static_cast<long>(lifetime.count()));
  X509_set_pubkey(cert.get(), subject_key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, reinterpret_cast<const unsigned char*>(common_name.c_str()),
                             -1, -1, 0);
  return cert;
}

std::string hex(const unsigned char* bytes, std::size_t n) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < n; ++i) {
    out += kHex[bytes[i] >> 4];
    out += kHex[bytes[i] & 0xF];
  }
  return out;
}

/// "DNS:name" or "IP:addr" for a SAN / name constraint.
std::string general_name(const std::string& host, bool constraint) {
  if (auto ip = canonical_ip(host)) {
    if (!constraint) return "IP:" + *ip;
    return ip->find(':') == std::string::npos ? "IP:" + *ip + "/255.255.255.255"
                                              : "IP:" + *ip + "/FFFF:FFFF:FFFF:FFFF:FFFF:FFFF:FFFF:FFFF";
  }
  // A wildcard rule "*.base" permits names under base (OpenSSL: "DNS:base" covers base and
  // every name below it; the allowlist itself admits one label only).
  if (constraint && host.rfind("*.", 0) == 0) return "DNS:" + host.substr(2);
  return "DNS:" + host;
}

}  // namespace

TlsAuthority::TlsAuthority(const std::vector<std::string>& permitted) : ca_key_(new_key()), leaf_key_(new_key()) {
  unsigned char id[8];
  if (RAND_bytes(id, sizeof id) != 1) fail("RAND_bytes");
  // Thirty days: longer than any proxy lives (each acquire replaces the proxy and its CA).
  ca_ = new_cert(ca_key_.get(), "maf-sandbox egress proxy CA " + hex(id, sizeof id), std::chrono::hours(24 * 30));
  X509_set_issuer_name(ca_.get(), X509_get_subject_name(ca_.get()));
  add_ext(ca_.get(), ca_.get(), NID_basic_constraints, "critical,CA:TRUE,pathlen:0");
  add_ext(ca_.get(), ca_.get(), NID_key_usage, "critical,keyCertSign,cRLSign");
  add_ext(ca_.get(), ca_.get(), NID_subject_key_identifier, "hash");
  std::string constraints;
  for (const auto& host : permitted) constraints += (constraints.empty() ? "" : ",") + ("permitted;" + general_name(host, true));
  if (!constraints.empty()) add_ext(ca_.get(), ca_.get(), NID_name_constraints, "critical," + constraints);
  if (!X509_sign(ca_.get(), ca_key_.get(), EVP_sha256())) fail("could not sign the CA certificate");
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(bio, ca_.get());
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  ca_pem_.assign(data, static_cast<std::size_t>(n));
  BIO_free(bio);
}

const Leaf& TlsAuthority::leaf_for(const std::string& host) {
  const auto now = std::chrono::system_clock::now();
  if (auto it = leaves_.find(host); it != leaves_.end() && it->second.not_after - now > std::chrono::hours(1))
    return it->second;
  X509Ptr cert = new_cert(leaf_key_.get(), host.substr(0, 64), kLeafLifetime);
  X509_set_issuer_name(cert.get(), X509_get_subject_name(ca_.get()));
  add_ext(cert.get(), ca_.get(), NID_basic_constraints, "critical,CA:FALSE");
  add_ext(cert.get(), ca_.get(), NID_key_usage, "critical,digitalSignature");
  add_ext(cert.get(), ca_.get(), NID_ext_key_usage, "serverAuth");
  add_ext(cert.get(), ca_.get(), NID_subject_alt_name, general_name(host, false));
  add_ext(cert.get(), ca_.get(), NID_authority_key_identifier, "keyid:always");
  if (!X509_sign(cert.get(), ca_key_.get(), EVP_sha256())) fail("could not sign a leaf for " + host);
  Leaf& leaf = leaves_[host];
  leaf.certificate = std::move(cert);
  leaf.key = leaf_key_.get();
  leaf.not_after = now + kLeafLifetime;
  return leaf;
}

}  // namespace maf::sandbox::egress_proxy
