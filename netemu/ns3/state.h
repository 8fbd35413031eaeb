// state.h -- what the engine keeps: messages, connections, datagrams, the error model
// Part of engine.cc (netemu.ns3), included by it once after the ns-3 and standard headers; not a header of
// its own: one translation unit keeps the first build at one compile of ns-3's headers.
#pragma once

namespace
{

void DatagramLost(Ptr<const Packet> p, const std::string& reason);
bool Dead(Ptr<const Packet> p);
std::set<std::pair<uint32_t, uint16_t>> dead; // (node, port) of the TCP senders of connections a crash ended

// The message a datagram's packet belongs to (the datagram transport: UDP).
class MessageTag : public Tag
{
  public:
    static TypeId GetTypeId()
    {
        static TypeId tid = TypeId("NetemuMessageTag").SetParent<Tag>().AddConstructor<MessageTag>();
        return tid;
    }

    TypeId GetInstanceTypeId() const override
    {
        return GetTypeId();
    }

    uint32_t GetSerializedSize() const override
    {
        return 8;
    }

    void Serialize(TagBuffer b) const override
    {
        b.WriteU64(id);
    }

    void Deserialize(TagBuffer b) override
    {
        id = b.ReadU64();
    }

    void Print(std::ostream& os) const override
    {
        os << "message=" << id;
    }

    uint64_t id = 0;
};

NS_OBJECT_ENSURE_REGISTERED(MessageTag);

// Per-packet loss (Bernoulli, own stream) and outage windows of one direction of a link.
class NetemuErrorModel : public ErrorModel
{
  public:
    static TypeId GetTypeId()
    {
        static TypeId tid = TypeId("NetemuErrorModel").SetParent<ErrorModel>().AddConstructor<NetemuErrorModel>();
        return tid;
    }

    double rate = 0.0;
    int down = 0;                                     // crashed ends of the link (`crash`)
    std::vector<std::pair<int64_t, int64_t>> outages; // [start, end) in ns
    Ptr<UniformRandomVariable> uniform = CreateObject<UniformRandomVariable>();

  private:
    bool DoCorrupt(Ptr<Packet> p) override
    {
        if (down > 0)
        {
            DatagramLost(p, "crash");
            return true;
        }
        if (!dead.empty() && Dead(p))
        {
            return true;
        }
        const int64_t now = Simulator::Now().GetNanoSeconds();
        for (const auto& w : outages)
        {
            if (w.first <= now && (w.second < 0 || now < w.second))
            {
                DatagramLost(p, "outage");
                return true;
            }
        }
        if (rate > 0 && uniform->GetValue() < rate)
        {
            DatagramLost(p, "loss");
            return true;
        }
        return false;
    }

    void DoReset() override
    {
    }
};

NS_OBJECT_ENSURE_REGISTERED(NetemuErrorModel);

const uint16_t PORT = 9;
const uint16_t UDP_PORT = 10;
uint32_t mss = 1448;

struct Message
{
    uint64_t id;
    uint64_t end; // byte offset of its last byte + 1 in its connection's stream
};

// One TCP connection: netemu's connection key names the current one (`current`); a connection that
// failed is left to its sockets and a new one opened for the key's next message.
struct Conn
{
    Ptr<Socket> sender;
    uint32_t src = 0, dst = 0; // its ends (nodes)
    uint16_t port = 0;         // the sender's local port
    bool connected = false;
    bool broken = false;
    bool closeWhenWritten = false; // a per-message connection: closed (FIN) once its message is written
    uint64_t queued = 0;   // bytes handed to the connection (sum of its messages)
    uint64_t written = 0;  // bytes written into the sender's socket
    uint64_t received = 0; // bytes the receiver has read
    std::deque<Message> messages; // not yet whole at the receiver, in order
    EventId stall;                // fires when no byte arrived for `timeout` while messages wait
    int64_t progress = 0;         // ns: the last byte received, or the last message sent to an idle connection
};

struct Out
{
    uint64_t id;
    int64_t t;
    std::string what; // "done" or "fail REASON"
};

std::vector<Ptr<Node>> nodes;
std::map<uint64_t, Conn> conns;                     // connection -> its state
std::map<uint64_t, uint64_t> current;               // netemu's connection key -> its current connection
uint64_t nextConn = 0;
int64_t timeout = -1;                               // ns without progress after which a connection's messages fail (-1: never)
std::map<std::pair<uint32_t, uint16_t>, uint64_t> byPort; // (sender node, local port) -> connection
std::map<Ptr<Socket>, uint64_t> receivers;          // accepted socket -> connection
std::map<uint32_t, uint32_t> nodeOfIp;              // IPv4 address -> node
std::vector<Ipv4Address> addressOf;                 // node -> its first address
std::vector<Out> out;
struct Datagram
{
    uint64_t bytes, received;
    uint32_t src, dst;
};

std::map<uint64_t, Datagram> datagrams;             // message in flight -> its bytes, bytes received, ends
std::vector<Ptr<Socket>> udpOut;                    // node -> its sending UDP socket (made when first needed)

void
Report(uint64_t id, const std::string& what)
{
    out.push_back({id, Simulator::Now().GetNanoSeconds(), what});
    Simulator::Stop();
}

} // namespace
