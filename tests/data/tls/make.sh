#!/usr/bin/env bash
# Makes the test certificates in this directory (committed; valid for 100
# years). Two certificate authorities: `ca` signs the server's and the
# trainer's certificates, `other-ca` signs a stranger's. Keys are
# unencrypted RSA 2048: they protect nothing but tests.
set -euo pipefail
cd "$(dirname "$0")"
days=36500
make_ca() { # NAME
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.pem" -days $days \
    -subj "/CN=sprintrt test $1" 2>/dev/null
}
make_cert() { # NAME CA
  openssl req -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.csr" -subj "/CN=sprintrt test $1" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' > "$1.ext"
  openssl x509 -req -in "$1.csr" -CA "$2.pem" -CAkey "$2.key" -CAcreateserial -out "$1.pem" \
    -days $days -extfile "$1.ext" 2>/dev/null
  rm -f "$1.csr" "$1.ext"
}
make_ca ca
make_ca other-ca
make_cert server ca
make_cert trainer ca
make_cert stranger other-ca
rm -f ./*.srl ca.key other-ca.key
