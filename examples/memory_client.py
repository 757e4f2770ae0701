#!/usr/bin/env python3
"""A fieldbrain Memory service client: HRR vectors kept by the server, named by ids.

Makes a space, stores three unitary role vectors and three Gaussian filler vectors made from
seeds (no vector crosses the wire), binds each role to its filler, superposes the pairs into one
record, unbinds each role from the record and cleans the noisy result up against the fillers.
Only ids and a few cosines travel.

  python3 -m grpc_tools.protoc -I proto --python_out=gen --grpc_python_out=gen \
      proto/brain/v1/memory.proto
  PYTHONPATH=gen python3 examples/memory_client.py --target=127.0.0.1:50051

Exits 1 when a call fails or a role does not recover its own filler.
"""
import argparse
import sys

import grpc

from brain.v1 import memory_pb2 as pb
from brain.v1 import memory_pb2_grpc

ROLES = ["color", "shape", "size"]
FILLERS = ["red", "round", "big"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="127.0.0.1:50051", help="brain-server address, host:port")
    parser.add_argument("--space", default="memory-example", help="space name (replaced if it exists)")
    parser.add_argument("--dimension", type=int, default=1024, help="vector dimension (even)")
    args = parser.parse_args()

    memory = memory_pb2_grpc.MemoryStub(grpc.insecure_channel(args.target))
    timeout = 30  # seconds per call

    try:
        memory.CreateSpace(pb.CreateSpaceRequest(name=args.space, dimension=args.dimension, capacity=64),
                           timeout=timeout)
    except grpc.RpcError as e:
        if e.code() != grpc.StatusCode.ALREADY_EXISTS:
            raise
        memory.DeleteSpace(pb.DeleteSpaceRequest(name=args.space), timeout=timeout)
        memory.CreateSpace(pb.CreateSpaceRequest(name=args.space, dimension=args.dimension, capacity=64),
                           timeout=timeout)
    limits = memory.ListSpaces(pb.ListSpacesRequest(), timeout=timeout).limits
    print(f"space {args.space}: dimension {args.dimension}, capacity 64, backend {limits.backend}")

    def put(kind, seed, count):
        random = pb.RandomVectors(kind=kind, seed=seed, count=count)
        return list(memory.Put(pb.PutRequest(space=args.space, random=random), timeout=timeout).ids)

    roles = put(pb.VECTOR_KIND_UNITARY, 1, len(ROLES))
    fillers = put(pb.VECTOR_KIND_GAUSSIAN, 2, len(FILLERS))
    print(f"roles {','.join(ROLES)} -> ids {roles}")
    print(f"fillers {','.join(FILLERS)} -> ids {fillers}")

    pairs = list(memory.Bind(pb.BindRequest(space=args.space, a=roles, b=fillers), timeout=timeout).ids)
    record = memory.Superpose(pb.SuperposeRequest(space=args.space, groups=[pb.SuperposeGroup(ids=pairs)],
                                                  normalize=True), timeout=timeout).ids[0]
    print(f"record = {' + '.join(f'{r}*{f}' for r, f in zip(ROLES, FILLERS))} -> id {record}")

    probes = list(memory.Unbind(pb.UnbindRequest(space=args.space, c=[record] * len(roles), key=roles),
                                timeout=timeout).ids)
    cosines = memory.Similarity(pb.SimilarityRequest(space=args.space, a=probes, b=fillers), timeout=timeout).cosines
    for role, filler, cos in zip(ROLES, FILLERS, cosines):
        print(f"similarity(unbind(record, {role}), {filler}) = {cos:.3f}")

    matches = memory.Cleanup(pb.CleanupRequest(space=args.space, queries=probes, k=2, candidates=fillers),
                             timeout=timeout).results
    name_of = dict(zip(fillers, FILLERS))
    found = []
    for role, m in zip(ROLES, matches):
        ranked = ", ".join(f"{name_of[i]} ({c:.3f})" for i, c in zip(m.ids, m.cosines))
        print(f"cleanup of unbind(record, {role}): {ranked}")
        found.append(f"{role} -> {name_of[m.ids[0]]}")
    print("cleanup: " + ", ".join(found))

    memory.DeleteSpace(pb.DeleteSpaceRequest(name=args.space), timeout=timeout)
    expected = [f"{r} -> {f}" for r, f in zip(ROLES, FILLERS)]
    return 0 if found == expected else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except grpc.RpcError as e:
        print(f"memory_client: {e.code().name}: {e.details()}", file=sys.stderr)
        sys.exit(1)
