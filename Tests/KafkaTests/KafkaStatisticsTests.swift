import Foundation
import Kafka
import TestSupport
import Testing

@Suite("KafkaStatistics")
struct KafkaStatisticsTests {
    // Shape of librdkafka 2.0.2's statistics JSON, trimmed to the fields that matter.
    static let sample = """
        {"name":"rdkafka#consumer-1","type":"consumer","msg_cnt":7,"replyq":0,
         "brokers":{
           "127.0.0.1:40000/bootstrap":{"name":"127.0.0.1:40000/bootstrap","nodeid":-1,"state":"UP","source":"configured"},
           "127.0.0.1:40000/1":{"name":"127.0.0.1:40000/1","nodeid":1,"state":"UP","source":"learned"},
           "127.0.0.1:40001/2":{"name":"127.0.0.1:40001/2","nodeid":2,"state":"DOWN","source":"learned"},
           "GroupCoordinator":{"name":"GroupCoordinator","nodeid":-1,"state":"UP","source":"logical"}},
         "topics":{"orders":{"topic":"orders","partitions":{
           "0":{"partition":0,"fetchq_cnt":3,"consumer_lag":12},
           "1":{"partition":1,"fetchq_cnt":2,"consumer_lag":-1},
           "-1":{"partition":-1,"fetchq_cnt":0,"consumer_lag":-1}}}},
         "cgrp":{"state":"up","rebalance_cnt":4}}
        """

    @Test("lag per partition, queue depths, rebalance count and brokers up are decoded")
    func decode() throws {
        let statistics = try #require(KafkaStatistics.decode(Data(Self.sample.utf8)))
        #expect(statistics.queuedMessages == 7)
        #expect(statistics.fetchQueueMessages == 5)
        #expect(statistics.consumerLag == [TopicPartition(topic: "orders", partition: 0): 12])
        #expect(statistics.rebalanceCount == 4)
        #expect(statistics.brokersUp == 2)
    }

    @Test("something that is not statistics JSON gives nil")
    func rejectsGarbage() {
        #expect(KafkaStatistics.decode(Data("[1,2]".utf8)) == nil)
        #expect(KafkaStatistics.decode(Data("not json".utf8)) == nil)
    }

    @Test("statistics are decoded off the poll thread; those received before a mark never count as after it")
    func storeDecodesLaterInOrder() async throws {
        let store = KafkaStatisticsStore()
        let up = Self.sample
        let down = Self.sample.replacingOccurrences(of: "\"state\":\"UP\"", with: "\"state\":\"DOWN\"")
        func receive(_ json: String) { Data(json.utf8).withUnsafeBytes { store.receive($0) } }

        receive(up)
        store.mark()  // whether or not `up` was decoded by now, it was received before the mark
        #expect(await eventually { store.current != nil })
        #expect(store.current?.brokersUp == 2)
        #expect(!store.updatedAfterMark)

        receive("not json")
        receive(down)
        #expect(await eventually { store.updatedAfterMark })
        #expect(store.current?.brokersUp == 0)
    }
}
