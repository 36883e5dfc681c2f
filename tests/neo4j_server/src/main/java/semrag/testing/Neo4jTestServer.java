package semrag.testing;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.connectors.HttpConnector;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;
import org.neo4j.graphdb.QueryExecutionException;

/**
 * Starts a Neo4j Community server with Bolt on 127.0.0.1:PORT, data in DIR, user "neo4j"
 * with password PASSWORD. Prints "READY" when Bolt accepts connections and shuts down
 * cleanly when its standard input closes or reads "stop".
 *
 * <p>Usage: java -cp ... semrag.testing.Neo4jTestServer DIR PORT PASSWORD [PAGECACHE_MB]
 * (the page cache: 64 MB unless given). Further settings are read from DIR/neo4j.conf when it
 * exists, as a server reads its configuration file.
 */
public final class Neo4jTestServer {
  private Neo4jTestServer() {}

  public static void main(String[] args) throws Exception {
    Path home = Path.of(args[0]);
    int port = Integer.parseInt(args[1]);
    String password = args[2];
    long pageCacheMb = args.length > 3 ? Long.parseLong(args[3]) : 64L;
    DatabaseManagementServiceBuilder builder = new DatabaseManagementServiceBuilder(home);
    Path conf = home.resolve("neo4j.conf");
    if (java.nio.file.Files.exists(conf)) {
      builder.loadPropertiesFromFile(conf);
    }
    DatabaseManagementService service =
        builder
            .setConfig(BoltConnector.enabled, true)
            .setConfig(BoltConnector.listen_address, new SocketAddress("127.0.0.1", port))
            .setConfig(HttpConnector.enabled, false)
            .setConfig(GraphDatabaseSettings.auth_enabled, true)
            .setConfig(GraphDatabaseSettings.pagecache_memory, pageCacheMb * 1024 * 1024)
            .build();
    Runtime.getRuntime().addShutdownHook(new Thread(service::shutdown));
    // The embedded API runs with full rights: set the password so clients can log in.
    try {
      service
          .database("system")
          .executeTransactionally(
              "ALTER USER neo4j SET PASSWORD $password CHANGE NOT REQUIRED",
              java.util.Map.of("password", password));
    } catch (QueryExecutionException e) {
      // A restart on the same data directory: the password is already set.
      if (!e.getMessage().contains("Old password and new password cannot be the same")) {
        throw e;
      }
    }
    System.out.println("READY");
    System.out.flush();
    BufferedReader in =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    String line;
    while ((line = in.readLine()) != null) {
      if (line.trim().equals("stop")) {
        break;
      }
    }
    service.shutdown();
    System.out.println("STOPPED");
  }
}
