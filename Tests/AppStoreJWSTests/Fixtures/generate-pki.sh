#!/bin/sh
# Regenerates the test PKI with the openssl CLI (run from anywhere; outputs are committed).
#   Tests/Fixtures/pki/               the valid chain other engineers' E2E tests sign with (see README there)
#   Tests/AppStoreJWSTests/Fixtures/certs/   variants that must be rejected (README.md lists each)
# Fixed dates through `openssl ca -startdate/-enddate` so tests can pick signedDates around them.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
pki="$here/../../Fixtures/pki"
out="$here/certs"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$pki" "$out"

cat > "$work/ext.cnf" <<'CNF'
[ca]
default_ca = testca
[testca]
database = $ENV::WORK/index.txt
new_certs_dir = $ENV::WORK
serial = $ENV::WORK/serial
default_md = sha256
policy = anything
unique_subject = no
email_in_dn = no
copy_extensions = none
[anything]
commonName = supplied
organizationName = optional
[root]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always
[intermediate]
basicConstraints = critical, CA:TRUE, pathlen:0
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always
1.2.840.113635.100.6.2.1 = ASN1:NULL
[intermediate_wrong_oid]
basicConstraints = critical, CA:TRUE, pathlen:0
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always
1.2.840.113635.100.6.2.2 = ASN1:NULL
[leaf]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always
1.2.840.113635.100.6.11.1 = ASN1:NULL
[leaf_wrong_oid]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always
1.2.840.113635.100.6.11.2 = ASN1:NULL
[leaf_critical_unknown]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always
1.2.840.113635.100.6.11.1 = ASN1:NULL
1.3.6.1.4.1.55555.1 = critical, ASN1:NULL
[leaf_no_digital_signature]
basicConstraints = critical, CA:FALSE
keyUsage = critical, keyEncipherment
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid:always
1.2.840.113635.100.6.11.1 = ASN1:NULL
CNF
export WORK="$work"
: > "$work/index.txt"
echo 1000 > "$work/serial"

key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:"${2:-P-256}" -out "$1" 2>/dev/null; }
# issue SUBJECT-CN KEY ISSUER-CERT ISSUER-KEY SECTION START END OUT   (ISSUER-CERT "self" = self-signed)
issue() {
    openssl req -new -key "$2" -subj "/O=Bouncer Test/CN=$1" -out "$work/req.csr"
    if [ "$3" = self ]; then
        openssl ca -batch -config "$work/ext.cnf" -selfsign -keyfile "$2" -in "$work/req.csr" -extensions "$5" \
            -startdate "$6" -enddate "$7" -notext -out "$8" 2>/dev/null
    else
        openssl ca -batch -config "$work/ext.cnf" -cert "$3" -keyfile "$4" -in "$work/req.csr" -extensions "$5" \
            -startdate "$6" -enddate "$7" -notext -out "$8" 2>/dev/null
    fi
}

# Keys: committed so a regenerated PKI signs the same way (test material only, never trusted anywhere).
mkdir -p "$pki/keys"
[ -f "$pki/keys/root.key" ] || key "$pki/keys/root.key"
[ -f "$pki/keys/intermediate.key" ] || key "$pki/keys/intermediate.key"
[ -f "$pki/leaf.key" ] || key "$pki/leaf.key"
[ -f "$pki/keys/other-root.key" ] || key "$pki/keys/other-root.key"
[ -f "$pki/keys/leaf-p384.key" ] || key "$pki/keys/leaf-p384.key" P-384

S=20200101000000Z; E=20500101000000Z
# The valid chain (what Tests/Fixtures/pki/sign-jws uses by default).
issue "Bouncer Test Root CA" "$pki/keys/root.key" self "" root $S $E "$pki/root.pem"
issue "Bouncer Test WWDR Intermediate" "$pki/keys/intermediate.key" "$pki/root.pem" "$pki/keys/root.key" intermediate $S 20490101000000Z "$pki/intermediate.pem"
issue "Bouncer Test Receipt Signing Leaf" "$pki/leaf.key" "$pki/intermediate.pem" "$pki/keys/intermediate.key" leaf $S 20480101000000Z "$pki/leaf.pem"
openssl x509 -in "$pki/root.pem" -outform DER -out "$pki/root.der"

R="$pki/root.pem"; RK="$pki/keys/root.key"; I="$pki/intermediate.pem"; IK="$pki/keys/intermediate.key"; LK="$pki/leaf.key"
issue "Expired Leaf" "$LK" "$I" "$IK" leaf $S 20210101000000Z "$out/leaf-expired-2021.pem"
issue "Future Leaf" "$LK" "$I" "$IK" leaf 20400101000000Z 20480101000000Z "$out/leaf-not-before-2040.pem"
issue "Wrong OID Leaf" "$LK" "$I" "$IK" leaf_wrong_oid $S 20480101000000Z "$out/leaf-oid-6.11.2.pem"
issue "Critical Extension Leaf" "$LK" "$I" "$IK" leaf_critical_unknown $S 20480101000000Z "$out/leaf-unknown-critical-extension.pem"
issue "No DigitalSignature Leaf" "$LK" "$I" "$IK" leaf_no_digital_signature $S 20480101000000Z "$out/leaf-no-digital-signature.pem"
issue "P-384 Leaf" "$pki/keys/leaf-p384.key" "$I" "$IK" leaf $S 20480101000000Z "$out/leaf-p384.pem"

issue "Expired Intermediate" "$IK" "$R" "$RK" intermediate $S 20210101000000Z "$out/intermediate-expired-2021.pem"
issue "Leaf Under Expired Intermediate" "$LK" "$out/intermediate-expired-2021.pem" "$IK" leaf $S 20480101000000Z "$out/leaf-under-expired-intermediate.pem"
issue "Future Intermediate" "$IK" "$R" "$RK" intermediate 20400101000000Z 20490101000000Z "$out/intermediate-not-before-2040.pem"
issue "Leaf Under Future Intermediate" "$LK" "$out/intermediate-not-before-2040.pem" "$IK" leaf $S 20480101000000Z "$out/leaf-under-future-intermediate.pem"
issue "Wrong OID Intermediate" "$IK" "$R" "$RK" intermediate_wrong_oid $S 20490101000000Z "$out/intermediate-oid-6.2.2.pem"
issue "Leaf Under Wrong OID Intermediate" "$LK" "$out/intermediate-oid-6.2.2.pem" "$IK" leaf $S 20480101000000Z "$out/leaf-under-wrong-oid-intermediate.pem"

OR="$pki/keys/other-root.key"
issue "Untrusted Root CA" "$OR" self "" root $S $E "$out/untrusted-root.pem"
issue "Untrusted Intermediate" "$IK" "$out/untrusted-root.pem" "$OR" intermediate $S 20490101000000Z "$out/untrusted-intermediate.pem"
issue "Untrusted Leaf" "$LK" "$out/untrusted-intermediate.pem" "$IK" leaf $S 20480101000000Z "$out/untrusted-leaf.pem"

# Sanity: the valid chain passes strict verification; the generator fails loudly if not.
openssl verify -x509_strict -CAfile "$pki/root.pem" -untrusted "$pki/intermediate.pem" "$pki/leaf.pem" >/dev/null
echo "generated $(ls "$out" | wc -l) variant certificates and the chain in $pki"
