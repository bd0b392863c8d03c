// ferry-store-torture <replica path>
//
// The crash test's victim: resumes after the stored cursor and applies deterministic batches
// forever, each in one `ReplicaDatabase.apply` transaction, until the test SIGKILLs it.
//
// Batch k (cursor "k"): upserts "k-0" ... "k-39" at version k; for k >= 1 also updates
// "(k-1)-0" to version k and deletes "(k-1)-1". The test computes the state after batches
// 0...cursor from the same rule (CrashTests.expectedRows), so keep the two in step.
import FerryKit
import Foundation

let arguments = CommandLine.arguments
guard arguments.count == 2 else {
    FileHandle.standardError.write(Data("usage: ferry-store-torture <replica path>\n".utf8))
    exit(2)
}

func batch(_ k: Int) -> ChangeBatch {
    var changes: [RecordChange] = (0..<40).map { j in
        let id = "\(k)-\(j)"
        let body = #"{"id":"\#(id)","batch":\#(k),"payload":"\#(String(repeating: "p", count: 200))"}"#
        return .upsert(RemoteRecord(id: id, version: String(k), body: Data(body.utf8)))
    }
    if k >= 1 {
        changes.append(.upsert(RemoteRecord(id: "\(k - 1)-0", version: String(k), body: Data(#"{"updated":\#(k)}"#.utf8))))
        changes.append(.delete(id: "\(k - 1)-1"))
    }
    return ChangeBatch(changes: changes, cursor: String(k))
}

do {
    let replica = try ReplicaDatabase(path: arguments[1])
    try replica.prepare(StoreDefinition(name: "t", deletion: .hard, comparison: .ordered))
    // Bulk mode: big WAL between checkpoints, so kills also land mid-checkpoint and with a long WAL.
    try replica.setBulkMode(true)
    var k = (try replica.syncState(of: "t")?.cursor).flatMap { Int($0) }.map { $0 + 1 } ?? 0
    // Tells the test that start-up is over, so it can aim its kill at the batches: on a loaded
    // machine start-up alone can outlast any fixed delay.
    FileHandle.standardOutput.write(Data("ready\n".utf8))
    while true {
        _ = try replica.apply(batch(k), to: "t")
        k += 1
    }
} catch {
    FileHandle.standardError.write(Data("ferry-store-torture: \(error)\n".utf8))
    exit(1)
}
