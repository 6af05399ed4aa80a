// CommandStream: a Metal command queue plus the command buffer being filled. Dispatches go
// into the open command buffer in call order; commit sends it; wait blocks on everything sent.

public final class CommandStream: @unchecked Sendable {
    public let device: Device
    let queue: QueueBackend
    private let lock = Lock()
    private var open: CommandBufferBackend? = nil
    private var openKeepAlive: [AnyObject] = []
    private var pending = 0
    private var inFlight: [(buffer: CommandBufferBackend, keepAlive: [AnyObject])] = []

    init(device: Device, queue: QueueBackend) {
        self.device = device
        self.queue = queue
    }

    /// Checks, then encodes one dispatch. Throws (encoding nothing) on a bad argument.
    public func dispatch(_ kernel: Kernel, arguments: [KernelArgument], grid: Size3,
                         threadgroup: Size3 = .zero, mode: GridMode = .threads) throws {
        let plan = try DispatchPlanner.plan(kernel: kernel, arguments: arguments, grid: grid,
                                            threadgroup: threadgroup, mode: mode, device: device)
        try lock.withLock {
            if open == nil { open = try queue.makeCommandBuffer() }
            try open!.encode(plan)
            openKeepAlive += plan.keepAlive
            pending += 1
        }
    }

    /// Dispatches encoded since the last commit.
    public var pendingDispatches: Int { lock.withLock { pending } }

    /// Sends the open command buffer to the device; a no-op when nothing is pending.
    public func commit() {
        lock.withLock {
            guard let buffer = open else { return }
            buffer.commit()
            inFlight.append((buffer, openKeepAlive))
            open = nil
            openKeepAlive = []
            pending = 0
        }
    }

    /// Blocks until all committed work has finished; throws `.gpu` if any of it failed.
    public func wait() throws {
        let sent = lock.withLock { () -> [(buffer: CommandBufferBackend, keepAlive: [AnyObject])] in
            defer { inFlight.removeAll() }
            return inFlight
        }
        var failures: [String] = []
        for entry in sent {
            if let message = entry.buffer.waitUntilCompleted() { failures.append(message) }
        }
        if !failures.isEmpty {
            let more = failures.count > 1 ? " (and \(failures.count - 1) more failed command buffer(s))" : ""
            throw ShimError(.gpu, "wait: a command buffer failed on the GPU: \(failures[0])\(more)")
        }
    }

    /// `commit()` then `wait()`.
    public func synchronize() throws {
        commit()
        try wait()
    }
}
