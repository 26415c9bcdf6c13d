#!/usr/bin/env python3
"""gen_fuzz_seeds.py -- writes the seed corpus of tests/fuzz/fuzz_sigv4.c
(tests/fuzz/corpora/sigv4/) from the committed vectors, in the fuzz
target's input format: Authorization, method, path, query, authority, then
"name:value" headers, an empty line, the body. Run from tests/data/sigv4."""
import json
import os

OUT = "../../fuzz/corpora/sigv4"


def seed(v, authorization=None, extra_headers=()):
    authority = ""
    lines = []
    for name, value in v["headers"]:
        if name.lower() in ("host", ":authority"):
            authority = value
        lines.append(f"{name}:{value}".replace("\n", " "))
    lines.extend(extra_headers)
    head = [authorization if authorization is not None else v["authorization"], v["method"], v["path"],
            v["query"], authority] + lines
    return ("\n".join(head) + "\n\n" + v["body"]).encode()


def main():
    os.makedirs(OUT, exist_ok=True)
    seeds = {}
    for f in ("smithy_vectors.json", "curl_vectors.json"):
        for v in json.load(open(f))["vectors"]:
            seeds[v["name"]] = seed(v)
    v = json.load(open("smithy_vectors.json"))["vectors"][0]
    seeds["bad-algorithm"] = seed(v, v["authorization"].replace("AWS4-HMAC-SHA256", "AWS4-HMAC-SHA1"))
    seeds["no-signature"] = seed(v, v["authorization"].split(", Signature=")[0])
    seeds["token"] = seed(v, extra_headers=["x-amz-security-token:abc"])
    seeds["unsigned-payload"] = seed(v, extra_headers=["x-amz-content-sha256:UNSIGNED-PAYLOAD"])
    # Only an Authorization line: every other field is an empty (NULL) slice.
    seeds["authorization-only"] = v["authorization"].encode()
    seeds["garbage"] = b"AWS4-HMAC-SHA256 Credential=/,,,;;==\n\xff\n/../%zz/.\n&&=&%\n\n\n\x00"
    for name, data in seeds.items():
        with open(os.path.join(OUT, name), "wb") as fh:
            fh.write(data)


if __name__ == "__main__":
    main()
