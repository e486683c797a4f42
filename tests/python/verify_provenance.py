"""An independent check of what `ecp package --sign-key` writes, with the
reference libraries of the formats: securesystemslib's DSSE envelope and
keys (on pyca/cryptography), and in-toto-attestation's Statement and SLSA
Provenance v1 protobuf definitions.

usage: verify_provenance.py ENVELOPE PUBLIC_KEY ARCHIVE...

PUBLIC_KEY is a PEM SubjectPublicKeyInfo or an OpenSSH public key line.
Exits 0 when the envelope verifies with the key, its payload is an in-toto
Statement v1 whose predicate parses as SLSA Provenance v1 (no unknown
fields), and every ARCHIVE is a subject with its sha256; else prints why
and exits 1.
"""

import hashlib
import json
import os
import sys

from cryptography.hazmat.primitives import serialization
from google.protobuf import json_format
from in_toto_attestation.predicates.provenance.v1 import provenance_pb2
from in_toto_attestation.v1 import statement_pb2
from in_toto_attestation.v1.statement import Statement
from securesystemslib.dsse import Envelope
from securesystemslib.signer import SSlibKey


def load_public_key(path):
    data = open(path, "rb").read()
    if data.startswith(b"-----BEGIN"):
        return serialization.load_pem_public_key(data)
    return serialization.load_ssh_public_key(data)


def main(envelope_path, key_path, archives):
    envelope_json = json.loads(open(envelope_path).readline())
    keyids = [s.get("keyid", "") for s in envelope_json["signatures"]]
    envelope = Envelope.from_dict(envelope_json)
    # The key id is the signer's hint; the key itself is what verifies.
    key = SSlibKey.from_crypto(load_public_key(key_path), keyid=keyids[0])
    envelope.verify([key], 1)
    if envelope.payload_type != "application/vnd.in-toto+json":
        raise SystemExit("payloadType is " + envelope.payload_type)

    statement_pb = json_format.Parse(envelope.payload, statement_pb2.Statement())
    statement = Statement.copy_from_pb(statement_pb)
    statement.validate()
    if statement_pb.predicate_type != "https://slsa.dev/provenance/v1":
        raise SystemExit("predicateType is " + statement_pb.predicate_type)
    predicate = json.loads(envelope.payload)["predicate"]
    json_format.ParseDict(predicate, provenance_pb2.Provenance())

    subjects = {s.name: s.digest["sha256"] for s in statement_pb.subject}
    for archive in archives:
        digest = hashlib.sha256(open(archive, "rb").read()).hexdigest()
        name = os.path.basename(archive)
        if subjects.get(name) != digest:
            raise SystemExit(f"{name}: the statement says {subjects.get(name)}, the file is {digest}")
    print(f"verified: {len(subjects)} subject(s), key {key.keytype}/{key.scheme}")


if __name__ == "__main__":
    try:
        main(sys.argv[1], sys.argv[2], sys.argv[3:])
    except SystemExit:
        raise
    except Exception as error:  # the verifier's own refusal, printed
        print(f"refused: {type(error).__name__}: {error}")
        sys.exit(1)
