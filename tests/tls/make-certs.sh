#!/usr/bin/env bash
# Makes the test PKI of tests/tls.rs (kept in git, so the tests need no openssl): a CA, a
# server certificate for DNS:localhost and a client certificate signed by it, and another CA
# that signed nothing here. Test keys only: they protect nothing.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
days=36500
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
ca() {
  key "$1.key"
  openssl req -x509 -new -key "$1.key" -sha256 -days "$days" -subj "/CN=$2" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" -out "$1.pem"
}
leaf() { # name, CN, extensions
  key "$1.key"
  openssl req -new -key "$1.key" -subj "/CN=$2" -out "$1.csr"
  printf '%s\n' "basicConstraints=critical,CA:FALSE" "keyUsage=critical,digitalSignature" "$3" >"$1.ext"
  openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -sha256 -days "$days" \
    -extfile "$1.ext" -out "$1.pem" 2>/dev/null
  rm -f "$1.csr" "$1.ext"
}
ca ca "stomp-agent-bridge test CA"
ca other-ca "another test CA"
leaf server localhost $'subjectAltName=DNS:localhost\nextendedKeyUsage=serverAuth'
leaf client bridge "extendedKeyUsage=clientAuth"
rm -f ca.srl other-ca.key
