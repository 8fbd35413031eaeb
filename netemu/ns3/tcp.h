// tcp.h -- the reliable transport: messages as bytes on TCP connections
// Part of engine.cc (netemu.ns3), included by it once after the ns-3 and standard headers; not a header of
// its own: one translation unit keeps the first build at one compile of ns-3's headers.
#pragma once

namespace
{

void
Fill(uint64_t conn)
{
    Conn& c = conns[conn];
    if (!c.connected || c.broken)
    {
        return;
    }
    while (c.written < c.queued)
    {
        uint32_t room = c.sender->GetTxAvailable();
        if (room == 0)
        {
            return;
        }
        uint64_t n = std::min<uint64_t>(room, c.queued - c.written);
        int sent = c.sender->Send(Create<Packet>(static_cast<uint32_t>(n)));
        if (sent <= 0)
        {
            return;
        }
        c.written += static_cast<uint64_t>(sent);
    }
    if (c.closeWhenWritten)
    {
        c.sender->Close(); // its FIN follows the last byte, as an application that is done sending does
    }
}

void
Fail(uint64_t conn, const std::string& reason)
{
    Conn& c = conns[conn];
    if (c.broken)
    {
        return;
    }
    c.broken = true;
    Simulator::Cancel(c.stall);
    for (const Message& m : c.messages)
    {
        Report(m.id, "fail " + reason);
    }
    c.messages.clear();
    c.sender->Close();
}

void Stalled(uint64_t conn);

// Start the stall timer of a connection that has messages waiting and none running.  Progress only
// moves `progress`: the timer, when it fires, looks at it and waits again if bytes came meanwhile
// (one event per `timeout`, not one per packet received).
void
Arm(uint64_t conn)
{
    Conn& c = conns[conn];
    c.progress = Simulator::Now().GetNanoSeconds();
    if (timeout >= 0 && !c.messages.empty() && !c.broken && !c.stall.IsRunning())
    {
        c.stall = Simulator::Schedule(NanoSeconds(timeout), &Stalled, conn);
    }
}

void
Stalled(uint64_t conn)
{
    Conn& c = conns[conn];
    if (c.messages.empty() || c.broken)
    {
        return;
    }
    const int64_t quiet = Simulator::Now().GetNanoSeconds() - c.progress;
    if (quiet < timeout)
    {
        c.stall = Simulator::Schedule(NanoSeconds(timeout - quiet), &Stalled, conn);
        return;
    }
    Fail(conn, "timeout");
}

void
Received(uint64_t conn, uint64_t bytes)
{
    auto it = conns.find(conn);
    if (it == conns.end() || it->second.broken)
    {
        return;
    }
    Conn& c = it->second;
    c.received += bytes;
    while (!c.messages.empty() && c.received >= c.messages.front().end)
    {
        Report(c.messages.front().id, "done");
        c.messages.pop_front();
    }
    Arm(conn);
}

void
Recv(Ptr<Socket> s)
{
    Ptr<Packet> p;
    uint64_t n = 0;
    while ((p = s->Recv()))
    {
        n += p->GetSize();
    }
    auto it = receivers.find(s);
    if (it != receivers.end() && n)
    {
        Received(it->second, n);
    }
}

void
Forget(Ptr<Socket> s)
{
    receivers.erase(s);
}

void
Accept(Ptr<Socket> s, const Address& from)
{
    InetSocketAddress a = InetSocketAddress::ConvertFrom(from);
    auto node = nodeOfIp.find(a.GetIpv4().Get());
    if (node == nodeOfIp.end())
    {
        return;
    }
    auto conn = byPort.find({node->second, a.GetPort()});
    if (conn == byPort.end())
    {
        return;
    }
    receivers[s] = conn->second;
    s->SetRecvCallback(MakeCallback(&Recv));
    s->SetCloseCallbacks(MakeCallback(&Forget), MakeCallback(&Forget));
}

void
Connected(uint64_t conn, Ptr<Socket>)
{
    conns[conn].connected = true;
    Fill(conn);
}

void
Closed(uint64_t conn, Ptr<Socket>)
{
    dead.erase({conns[conn].src, conns[conn].port}); // its packets are gone with it
}

void
Broken(uint64_t conn, Ptr<Socket> s)
{
    Fail(conn, "reset");
    Closed(conn, s);
}

void
Room(uint64_t conn, Ptr<Socket>, uint32_t)
{
    Fill(conn);
}


uint64_t
Open(uint32_t src, uint32_t dst)
{
    uint64_t conn = nextConn++;
    Conn& c = conns[conn];
    c.sender = Socket::CreateSocket(nodes[src], TcpSocketFactory::GetTypeId());
    c.sender->Bind();
    Address local;
    c.sender->GetSockName(local);
    c.src = src;
    c.dst = dst;
    c.port = InetSocketAddress::ConvertFrom(local).GetPort();
    byPort[{src, c.port}] = conn;
    dead.erase({src, c.port}); // a port used again: the connection that had it is over
    c.sender->SetConnectCallback(MakeBoundCallback(&Connected, conn), MakeBoundCallback(&Broken, conn));
    c.sender->SetSendCallback(MakeBoundCallback(&Room, conn));
    c.sender->SetCloseCallbacks(MakeBoundCallback(&Closed, conn), MakeBoundCallback(&Broken, conn));
    c.sender->Connect(InetSocketAddress(addressOf[dst], PORT));
    return conn;
}

void
Send(uint64_t id, uint32_t src, uint32_t dst, uint64_t bytes, uint64_t key, bool last)
{
    auto it = current.find(key);
    if (it == current.end() || conns[it->second].broken)
    {
        current[key] = Open(src, dst);
    }
    uint64_t conn = current[key];
    Conn& c = conns[conn];
    c.queued += bytes;
    c.closeWhenWritten = last;
    bool idle = c.messages.empty();
    c.messages.push_back({id, c.queued});
    if (idle)
    {
        Arm(conn);
    }
    Fill(conn);
    if (last)
    {
        current.erase(key);
    }
}

} // namespace
