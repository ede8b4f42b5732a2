#!/usr/bin/env bash
# The HTTPS upstream's files for the method/path-rule tests (issue 45), in DIR: the test's own
# CA (testca.pem/.key), an upstream certificate it signed for allowed.test and other.test
# (up.pem/.key), a certificate for untrusted.test from a CA nobody trusts (bad.pem/.key), and
# the document tree tls_upstream.py serves (www/): /repo/x, /REPO/x, /admin, /open, and two bare
# git repositories for the dumb HTTP protocol (one under /repo/, one outside it). Keys are
# world-readable so the upstream container's user can read them; they are the test's alone.
# Shared by test_docker_egress_l7 and test_wslc_egress_l7, so both backends face one upstream.
set -euo pipefail
cd "$1"
cert() {  # name CN SANs signer-stem
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$1.key" -out "$1.csr" -subj "/CN=$2"
  printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth\n' "$3" >"$1.ext"
  openssl x509 -req -in "$1.csr" -CA "$4.pem" -CAkey "$4.key" -CAcreateserial -out "$1.pem" -days 2 -extfile "$1.ext"
  chmod 0644 "$1.key"
}
ca() {  # stem CN
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$1.key" -out "$1.pem" -days 2 \
    -subj "/CN=$2" -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign
}
ca testca maf-l7-test-CA
cert up allowed.test DNS:allowed.test,DNS:other.test testca
ca badca maf-l7-untrusted-CA
cert bad untrusted.test DNS:untrusted.test badca
mkdir -p www/repo www/REPO
echo hello-from-repo >www/repo/x
echo upper >www/REPO/x
echo secret >www/admin
echo anything >www/open
git init -q src
echo hi >src/README
git -C src -c user.email=t@t -c user.name=t add README
git -C src -c user.email=t@t -c user.name=t commit -qm one
git clone -q --bare src www/repo/proj.git
git -C www/repo/proj.git update-server-info
git clone -q --bare src www/other.git
git -C www/other.git update-server-info
